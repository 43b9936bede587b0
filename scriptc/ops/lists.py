"""Lists in scripted code: every list method TorchScript has, indexing, slicing, +, *, `in`, and the
builtins over lists (len, min, max, sum, sorted, any, all). Ops that change a list declare it
(`mutates`), so passes never drop or reorder them."""

from __future__ import annotations

import operator

from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DictType,
    Float,
    Int,
    ListType,
    NoneType,
    OptionalType,
    Scalar,
    TensorType,
    TupleType,
    Type,
    UnionType,
)

from .pyvalues import element, fixed, number_kind, python_op, same_lists

_NONE = fixed(NoneType)
_SELF = lambda lst, *rest: lst  # noqa: E731 - the result is the list's own type


def _checked(lst: list, i: int) -> int:
    if not -len(lst) <= i < len(lst):
        raise IndexError("list index out of range")
    return i


def _append(lst, value):
    lst.append(value)
    return lst


def _setitem(lst, i, value):
    lst[_checked(lst, i)] = value


def _delitem(lst, i):
    del lst[_checked(lst, i)]


def _pop(lst, i):
    if not lst:
        raise IndexError("pop from empty list")
    return lst.pop(_checked(lst, i))


def _sorted_in_place(lst, reverse):
    """list.sort; tensors order by their truth value (`a < b`), which only a one-element tensor has."""
    try:
        lst.sort(reverse=reverse)
    except ValueError:  # numpy's truth value of a many-element comparison, in torch's words
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous") from None


def _sorted_copy(lst, reverse):
    copy = list(lst)
    _sorted_in_place(copy, reverse)
    return copy


def _contains(lst, value) -> bool:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return any(v is value for v in lst)
    return value in lst


def _index(lst, value) -> int:
    for i, v in enumerate(lst):
        if v == value:
            return i
    raise ValueError(f"'{value}' is not in list")


def _remove(lst, value) -> None:
    for i, v in enumerate(lst):
        if v == value:
            del lst[i]
            return
    raise ValueError("list.remove(x): x not in list")


def _extreme(pick):
    def reduce(lst):
        if not lst:
            raise ValueError(f"{pick.__name__}() arg is an empty sequence")
        return pick(lst)
    return reduce


def _sum_type(lst, start):
    elem = element(lst)
    if isinstance(elem, TensorType):
        return TensorType()
    return number_kind(elem, start)


def _matches(elem: Type, value: Type) -> bool:
    """Whether a list of `elem` takes a `value` as TorchScript's type variable matching does: the same
    type (any tensor for a tensor), a member of an Optional/Union element; no numeric promotion."""
    if value == elem or elem == Any_ or isinstance(elem, TensorType) and isinstance(value, TensorType):
        return True
    if value == Scalar:
        return elem in (Int, Float, Complex)  # x.item(): its kind is known only at run time
    if isinstance(value, UnionType):
        return all(_matches(elem, option) for option in value.options)
    if isinstance(elem, OptionalType):
        return value == NoneType or _matches(elem.elem, value) or (
            isinstance(value, OptionalType) and _matches(elem.elem, value.elem))
    if isinstance(elem, UnionType):
        return any(_matches(option, value) for option in elem.options)
    if isinstance(elem, ListType) and isinstance(value, ListType):
        return _matches(elem.elem, value.elem)
    if isinstance(elem, TupleType) and isinstance(value, TupleType):
        return len(elem.elems) == len(value.elems) and all(map(_matches, elem.elems, value.elems))
    if isinstance(elem, DictType) and isinstance(value, DictType):
        return _matches(elem.key, value.key) and _matches(elem.value, value.value)
    return False


def _takes(result):
    """The type rule of an op putting a value into a list: `result` when the list's elements match it,
    else torch's words for the mismatch."""
    def rule(lst, *args):
        value = args[-1]
        if not _matches(element(lst), value):
            raise TypeError(f"Could not match type {value} to t in argument 'el': Type variable 't' previously "
                            f"matched to type {element(lst)} is matched to type {value}.")
        return result(lst)
    return rule


def _mutating(schema: str, kernel, doc: str = "") -> None:
    python_op(schema, kernel, _NONE, doc, mutates=("self",))


python_op("len.list(self: List[Any]) -> int", len, fixed(Int), "len() of a list (any element type).")
python_op("getitem.list(self: List[Any], index: int) -> Any", lambda lst, i: lst[_checked(lst, i)],
          lambda lst, i: element(lst))
python_op("slice.list(self: List[Any], start: int?, end: int?, step: int) -> List[Any]",
          lambda lst, a, b, c: lst[a:b:c], _SELF)
python_op("append.list(self: List[Any], value: Any) -> List[Any]", _append, _takes(lambda lst: lst),
          "list.append: mutates the list.", mutates=("self",))
_mutating("setitem.list(self: List[Any], index: int, value: Any) -> None", _setitem, "lst[i] = value.")
_mutating("delitem.list(self: List[Any], index: int) -> None", _delitem, "del lst[i].")
_mutating("extend.list(self: List[Any], other: List[Any]) -> None", list.extend)
python_op("insert.list(self: List[Any], index: int, value: Any) -> None", list.insert, _takes(lambda lst: NoneType),
          mutates=("self",))
_mutating("remove.list(self: List[Any], value: Any) -> None", _remove)
_mutating("clear.list(self: List[Any]) -> None", list.clear)
_mutating("sort.list(self: List[Any], reverse: bool = False) -> None", _sorted_in_place)
_mutating("reverse.list(self: List[Any]) -> None", list.reverse)
python_op("pop.list(self: List[Any], index: int = -1) -> Any", _pop, lambda lst, i: element(lst), mutates=("self",))
python_op("index.list(self: List[Any], value: Any) -> int", _index, fixed(Int))
python_op("count.list(self: List[Any], value: Any) -> int", list.count, fixed(Int))
python_op("copy.list(self: List[Any]) -> List[Any]", list.copy, _SELF, "A shallow copy (list.copy(), list(lst)).")
python_op("contains.list(self: List[Any], value: Any) -> bool", _contains, fixed(Bool), "`value in lst`.")
python_op("add.list(a: List[Any], b: List[Any]) -> List[Any]", operator.add, same_lists)
python_op("mul.list(self: List[Any], times: int) -> List[Any]", operator.mul, _SELF)
python_op("mul.int_list(times: int, self: List[Any]) -> List[Any]", operator.mul, lambda times, lst: lst)
python_op("min.list(self: List[Any]) -> Any", _extreme(min), lambda lst: element(lst), "min() of one list.")
python_op("max.list(self: List[Any]) -> Any", _extreme(max), lambda lst: element(lst), "max() of one list.")
python_op("min.lists(a: List[Any], b: List[Any]) -> List[Any]", min, same_lists, "min() of two lists.")
python_op("max.lists(a: List[Any], b: List[Any]) -> List[Any]", max, same_lists, "max() of two lists.")
def _compared(a, b):
    same_lists(a, b)
    return Bool


for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    python_op(f"{_name}.list(a: List[Any], b: List[Any]) -> bool", _fn, _compared)
python_op("sum.list(self: List[Any], start: Scalar = 0) -> Any", lambda lst, start: sum(lst, start), _sum_type)
python_op("sorted.list(self: List[Any], reverse: bool = False) -> List[Any]", _sorted_copy, _SELF)
python_op("any.list(self: List[Any]) -> bool", any, fixed(Bool))
python_op("all.list(self: List[Any]) -> bool", all, fixed(Bool))
python_op("range.int(start: int, stop: int, step: int) -> int[]", lambda a, b, c: list(range(a, b, c)),
          fixed(ListType(Int)), "list(range(start, stop, step)).")
