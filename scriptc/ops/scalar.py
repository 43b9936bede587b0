"""Scalar ops: sizes of tensors and arithmetic on Python numbers, for traced and scripted graphs."""

from __future__ import annotations

import math
import operator

from scriptc.types import Bool, DType, Float, Int, ListType, type_of_constant

from . import register
from .rules import is_unknown, normalize_dim
from .schema import SCALAR


def _type(value):
    return value.type if is_unknown(value) else type_of_constant(value)


def _size_kernel(xp, x, dim):
    return int(x.shape[normalize_dim(dim, x.ndim, "size")])


register("size(self: Tensor, dim: int) -> int", SCALAR, _size_kernel,
         shape=lambda x, dim: Int, method=False, function=False, doc="The size of one dim.")
register("size.all(self: Tensor) -> int[]", SCALAR, lambda xp, x: [int(d) for d in x.shape],
         shape=lambda x: ListType(Int), method=False, function=False)
register("dim(self: Tensor) -> int", SCALAR, lambda xp, x: int(x.ndim), shape=lambda x: Int,
         method=False, function=False)
register("numel(self: Tensor) -> int", SCALAR, lambda xp, x: int(x.size), shape=lambda x: Int,
         method=False, function=False)
register("item(self: Tensor) -> Scalar", SCALAR, lambda xp, x: x.item(), method=False, function=False,
         shape=lambda x: Float if x.dtype is not None and x.dtype.is_floating_point else
         (Bool if x.dtype is not None and x.dtype.name == "bool" else Int))


def _numeric(a, b, int_result=True):
    ta, tb = _type(a), _type(b)
    if ta == Float or tb == Float or not int_result:
        return Float
    return Int


def _binary(name, fn, rule):
    register(f"{name}.scalar(a: Scalar, b: Scalar) -> Scalar", SCALAR, lambda xp, a, b: fn(a, b),
             shape=rule, method=False, function=False)


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("mod", operator.mod)):
    _binary(_name, _fn, _numeric)
_binary("div", operator.truediv, lambda a, b: Float)
_binary("pow", operator.pow, lambda a, b: Float if _type(a) == Float or _type(b) == Float else Int)
_binary("min", min, _numeric)
_binary("max", max, _numeric)
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    _binary(_name, _fn, lambda a, b: Bool)
for _name, _fn in (("eq", operator.eq), ("ne", operator.ne)):
    register(f"{_name}.scalar(a: Any, b: Any) -> bool", SCALAR, (lambda f: lambda xp, a, b: f(a, b))(_fn),
             shape=lambda a, b: Bool, method=False, function=False, doc="== / != on numbers, strings, dtypes.")
register("neg.scalar(a: Scalar) -> Scalar", SCALAR, lambda xp, a: -a, shape=lambda a: _type(a),
         method=False, function=False)
register("abs.scalar(a: Scalar) -> Scalar", SCALAR, lambda xp, a: abs(a), shape=lambda a: _type(a),
         method=False, function=False)
register("not.scalar(a: bool) -> bool", SCALAR, lambda xp, a: not a, shape=lambda a: Bool,
         method=False, function=False)
register("int.scalar(a: Scalar) -> int", SCALAR, lambda xp, a: int(a), shape=lambda a: Int,
         method=False, function=False)
register("float.scalar(a: Scalar) -> float", SCALAR, lambda xp, a: float(a), shape=lambda a: Float,
         method=False, function=False)
register("bool.scalar(a: Scalar) -> bool", SCALAR, lambda xp, a: bool(a), shape=lambda a: Bool,
         method=False, function=False)
for _name in ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "erf"):
    register(f"math.{_name}(a: float) -> float", SCALAR,
             (lambda f: lambda xp, a: f(a))(getattr(math, _name)),
             shape=(lambda n: lambda a: Int if n in ("floor", "ceil") else Float)(_name),
             method=False, function=False)


def _list_elem(lst):
    """The element type of a list argument whose IR type is known."""
    if is_unknown(lst) and isinstance(lst.type, ListType):
        return lst.type.elem
    return Float
register("bool.tensor(self: Tensor) -> bool", SCALAR, lambda xp, x: bool(_one_element(x, "bool")),
         shape=lambda x: Bool, method=False, function=False, doc="bool(tensor): a one-element tensor's truth.")
register("int.tensor(self: Tensor) -> int", SCALAR, lambda xp, x: int(_one_element(x, "int")),
         shape=lambda x: Int, method=False, function=False)
register("float.tensor(self: Tensor) -> float", SCALAR, lambda xp, x: float(_one_element(x, "float")),
         shape=lambda x: Float, method=False, function=False)


def _one_element(x, what):
    if x.size != 1:
        raise RuntimeError(f"a Tensor with {x.size} elements cannot be converted to Scalar ({what})")
    return x.reshape(()).item()


def _list_index(lst, i):
    if not -len(lst) <= i < len(lst):
        raise IndexError("list index out of range")
    return lst[i]


def _list_append(lst, value):
    lst.append(value)
    return lst


register("len.list(self: List[Any]) -> int", SCALAR, lambda xp, lst: len(lst), shape=lambda lst: Int,
         method=False, function=False, doc="len() of a list (any element type).")
register("getitem.list(self: List[Any], index: int) -> Any", SCALAR, lambda xp, lst, i: _list_index(lst, i),
         shape=lambda lst, i: _list_elem(lst), method=False, function=False)
register("append.list(self: List[Any], value: Any) -> List[Any]", SCALAR,
         lambda xp, lst, v: _list_append(lst, v), shape=lambda lst, v: lst.type if is_unknown(lst) else ListType(Int),
         mutates=("self",), method=False, function=False, doc="list.append: mutates the list.")
register("and.scalar(a: bool, b: bool) -> bool", SCALAR, lambda xp, a, b: bool(a and b), shape=lambda a, b: Bool,
         method=False, function=False, doc="Both operands already evaluated (short circuit is a prim::If).")
register("or.scalar(a: bool, b: bool) -> bool", SCALAR, lambda xp, a, b: bool(a or b), shape=lambda a, b: Bool,
         method=False, function=False)


def _dtype_of(xp, x):
    from scriptc.types import from_numpy_dtype
    return from_numpy_dtype(x.dtype)


register("dtype(self: Tensor) -> ScalarType", SCALAR, _dtype_of, shape=lambda x: DType, method=False,
         function=False, doc="Tensor.dtype in scripted code.")
