"""Op-table ops matched by schema: tensor ops and the SCALAR ops behind Python builtins and methods,
their arguments bound in schema order and their output types from their type rules."""

from __future__ import annotations

from functools import lru_cache

from scriptc import ops
from scriptc.bindings import makes_tensors
from scriptc.ir.graph import Value
from scriptc.ir.verify import fits
from scriptc.ops.rules import Unknown
from scriptc.types import (
    Bool,
    DeviceT,
    DType,
    Float,
    Int,
    ListType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
)

from .values import (
    SugaredTuple,
    TypeValue,
)


class OpCalls:
    """Calls of op-table ops, by base name through their overloads."""

    def call_op(self, name: str, args: list, kwargs: dict, node, method: bool = False, namespaced: bool = False,
                aten: bool = False):
        """A tensor op of the table by base name, trying its overloads in table order (`namespaced`:
        also those that are only in a namespace such as torch.linalg)."""
        candidates = _tensor_overloads(name, method, namespaced, aten)
        if not candidates:
            raise self.error(f"'Tensor' object has no attribute or method '{name}'." if method else
                             f"unknown builtin op '{name}'", node)
        if any(makes_tensors(op) for op in candidates) and ("layout" in kwargs or "pin_memory" in kwargs):
            kwargs = self.dense_factory_options(kwargs, node)
        if "out" in kwargs and not any("out" in op.arg_index for op in candidates):
            # torch.add(a, b, out=c): the result written into `out`, which the call returns
            kwargs = dict(kwargs)
            out = self.as_value(kwargs.pop("out"), node)
            result = self.call_overloads(name, candidates, args, kwargs, node)
            self.at(node)
            return self.emit_op(ops.OPS["write_out"], [out, self.as_value(result, node)], node)
        return self.call_overloads(name, candidates, args, kwargs, node)

    def dense_factory_options(self, kwargs: dict, node) -> dict:
        """A factory's layout= and pin_memory= as torch's schemas take them: scripted tensors are dense
        and in host memory, so torch.strided (0) or None, and pin_memory False or None, change nothing."""
        kwargs = dict(kwargs)
        for name, allowed in (("layout", (0, None)), ("pin_memory", (False, None))):
            if name not in kwargs:
                continue
            value = self.as_value(kwargs.pop(name), node)
            constant = value.node.attrs.get("value", ...) if value.node is not None and \
                value.node.op == "prim::Constant" else ...
            if constant not in allowed or type(constant) is not type(allowed[0]) and constant is not None:
                raise self.error(f"{name}={'torch.strided' if name == 'layout' else 'False'} (or None) is all "
                                 f"scripted code takes: its tensors are dense, in host memory", node)
        return kwargs

    def python_op(self, name: str, args: list, kwargs: dict, node, failure: str | None = None):
        """A Python-value op (kind SCALAR) by base name: `len`, `upper`, `add`... (builtins.py)."""
        candidates = _python_overloads(name)
        if not candidates:
            raise self.error(failure or f"unknown builtin op '{name}'", node)
        return self.call_overloads(name, candidates, args, kwargs, node, failure)

    def call_overloads(self, name: str, candidates: list, args: list, kwargs: dict, node, failure=None):
        args = [self.op_argument(a, node) for a in args]
        kwargs = {k: self.op_argument(v, node) for k, v in kwargs.items()}
        reasons, refusals = [], []
        # a tensor where a number is declared is read as one (at run time), and an int where a dtype is
        # as its ScalarType, only when no overload takes it
        for from_tensor in (False, True):
            for op in candidates:
                bound = self.bind_schema(op, args, kwargs, from_tensor)
                if isinstance(bound, str):
                    if not from_tensor:
                        reasons.append(f"  {op.schema}\n    {bound}")
                    continue
                result = self.emit_op(op, bound, node)
                if result is not None:
                    return result
                if not from_tensor:
                    refusal = _rule_refusal(op, bound)
                    reasons.append(f"  {op.schema}\n    {refusal}")
                    if refusal is not _RULE_REFUSED:
                        refusals.append(refusal)
            if not any(isinstance(a, Value) and (isinstance(a.type, TensorType) or a.type == Int)
                       for a in [*args, *kwargs.values()]):
                break
        if failure is not None:
            raise self.error("\n".join([failure, *refusals]), node)
        raise self.error(f"Arguments for call are not valid; '{name}' accepts:\n" + "\n".join(reasons), node)

    def op_argument(self, value, node) -> Value:
        if isinstance(value, SugaredTuple):
            return self.as_value(value, node)
        if isinstance(value, TypeValue):
            raise self.error("a type cannot be passed to an op", node)
        return self.as_value(value, node)

    def bind_schema(self, op, args: list[Value], kwargs: dict[str, Value], from_tensor: bool = False):
        """The op's arguments in schema order (defaults as None), or why they do not fit: TorchScript's
        schema matching, with int[] varargs (x.view(2, 3)) and tuples for lists (`from_tensor`: and a
        tensor where an int, float or Scalar is declared, read as a number when called)."""
        params = op.schema.args
        positional = _positional(op)
        if "input" in kwargs and params and params[0].name == "self" and not args:
            kwargs = dict(kwargs)
            kwargs["self"] = kwargs.pop("input")  # torch.ceil(input=x)
        if len(args) > len(positional) or len(args) == len(positional) and args and (
                args[-1].type == Int or isinstance(args[-1].type, TensorType)):
            packed = self.pack_varargs(positional, args, from_tensor)
            if packed is None and len(args) > len(positional):
                return f"expected at most {len(positional)} arguments but got {len(args)}"
            args = packed or args
        bound = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                bound.append(kwargs[p.name])
            elif p.has_default:
                bound.append(None)
            else:
                return f"argument '{p.name}' not provided"
        extra = kwargs and set(kwargs) - {p.name for p in params[len(args):]}
        if extra:
            return f"unexpected keyword argument '{sorted(extra)[0]}'"
        out = []
        for p, v in zip(params, bound):
            if v is None:
                out.append(p.default)
                continue
            if not _fits(v.type, p.type):
                converted = self.schema_conversion(v, p.type, from_tensor)
                if converted is None:
                    return f"argument '{p.name}' expects {p.type}, but got {v.type}"
                v = converted
            out.append(self.scalar_argument(v, p.type, op))
        return out

    def pack_varargs(self, positional: list, args: list, from_tensor: bool = False):
        """x.view(2, 3) / torch.zeros(2, 3) / torch.einsum("ij,jk", a, b): the trailing ints or tensors
        as the list the last positional parameter takes (TorchScript's varargs rule); one tensor for an
        int list (torch.zeros(h), h a tensor) only when conversions are allowed (`from_tensor`), as
        TorchScript converts it only when no overload takes the tensor as it is."""
        last = len(positional) - 1
        if last < 0 or not isinstance(positional[last].type, ListType):
            return None
        elem, rest = positional[last].type.elem, args[last:]
        if isinstance(elem, TensorType):
            if not rest or not all(isinstance(v.type, TensorType) for v in rest):
                return None
        elif elem == Int and (len(rest) > 1 or from_tensor) and any(isinstance(v.type, TensorType) for v in rest) and all(
                v.type == Int or isinstance(v.type, TensorType) for v in rest):
            # torch.zeros(0, h, w) with h and w tensors (torchvision's mask pasting, scripted while traced):
            # each read as its int, as TorchScript's IntImplicit
            rest = [self.implicit_conversion(v, Int, from_tensor=True) if v.type != Int else v for v in rest]
        elif elem not in (Int, Float) or not all(v.type in (Int, Float) or v.type == elem for v in rest):
            return None
        return args[:last] + [self.emit1("prim::ListConstruct", rest, positional[last].type)]

    def schema_conversion(self, value: Value, expected: Type, from_tensor: bool = False):
        """Where an op's schema takes int[]: a tuple of ints; int, float, bool or Scalar (`from_tensor`):
        a one-element tensor's value; ScalarType: an int; Device: a str."""
        if isinstance(expected, ListType) and isinstance(value.type, TupleType):
            return self.implicit_conversion(value, ListType(expected.elem if expected.elem != Scalar else Float))
        if from_tensor and (isinstance(value.type, TensorType) or value.type == Int and expected in _DTYPES):
            return self.implicit_conversion(value, expected, from_tensor=True)  # (an int dtype: dtype=6)
        if value.type == Str and expected in (DeviceT, OptionalType(DeviceT)):  # torch.zeros(2, device="cpu")
            return self.emit1("device.str", [value, self.shared_const(None)], DeviceT)
        return None

    def emit_op(self, op, bound: list, node):
        """Emit the op with its output types from its type rule; None when the rule rejects the
        arguments (so that the next overload is tried)."""
        values = [v if isinstance(v, Value) else self.shared_const(v) for v in bound]
        types = self.output_types(op, values)
        if types is None:
            return None
        if op.inplace_of is not None:
            types = [values[0].type]
        self.at(node)
        result = self.emit(op.name, values, types)
        if len(result.outputs) > 1:
            picked = _python_result(op, values, result.outputs)
            if picked is not None:
                return picked
            return SugaredTuple(result.outputs, tuple(op.result_names))
        return result.output

    def output_types(self, op, values: list[Value]) -> list[Type] | None:
        """Output types from the op's type rule where it agrees with the schema, else the schema's.
        A SCALAR op's rule decides (raising TypeError rejects the arguments)."""
        if op.kind == ops.SCALAR:
            return _scalar_types(op, tuple(v.type for v in values))
        key = tuple(_meta_key(self.static_meta(v)) for v in values)
        try:
            return list(_tensor_op_types(op, key))
        except TypeError:  # a constant that cannot be a cache key (an array): work it out directly
            return list(_tensor_op_types.__wrapped__(op, key))

    def static_meta(self, v: Value):
        """What a type rule sees for one argument: a constant's value, a tensor's type, or Unknown(type)."""
        if v.node is not None and v.node.op == "prim::Constant":
            return v.node.attrs["value"]
        if isinstance(v.type, TensorType):
            return v.type
        if v.node is not None and v.node.op == "prim::ListConstruct":
            return [self.static_meta(x) for x in v.node.inputs]
        return Unknown(v.type)



@lru_cache(maxsize=4096)
def _fits(actual: Type, expected: Type) -> bool:
    return fits(actual, expected)


class _NotConstant:
    """An argument python_result may not look at: only constants pick an op's eager result."""

    def __bool__(self):
        raise TypeError("not a constant")

    def __getattr__(self, name):
        raise TypeError("not a constant")


def _python_result(op, values: list[Value], outputs: list[Value]):
    """What the op returns in Python, where its flags pick among its outputs (torch.unique's
    return_inverse/return_counts), when those flags are constants; None otherwise."""
    if op.python_result is None:
        return None
    args = [v.node.attrs["value"] if v.node is not None and v.node.op == "prim::Constant" else _NotConstant()
            for v in values]
    try:
        picked = op.python_result(args, list(outputs))
    except Exception:  # noqa: BLE001 - a flag that is not a constant: all the outputs, as the schema says
        return None
    if isinstance(picked, Value):
        return picked
    if isinstance(picked, tuple) and all(isinstance(p, Value) for p in picked):
        return SugaredTuple(list(picked))
    return None


def _meta_key(meta):
    """A type rule's argument as a hashable key: ("t", TensorType) / ("u", type) / ("l", items) / ("c", value)."""
    if isinstance(meta, TensorType):
        return ("t", meta)
    if isinstance(meta, Unknown):
        return ("u", meta.type)
    if isinstance(meta, list):
        return ("l", tuple(_meta_key(m) for m in meta))
    return ("c", meta)


def _meta_of(key):
    kind, value = key
    if kind == "u":
        return Unknown(value)
    if kind == "l":
        return [_meta_of(k) for k in value]
    return value


_RULE_REFUSED = "the argument types do not fit its type rule"


def _rule_refusal(op, bound: list) -> str:
    """Why a Python-value op's type rule refused these arguments (its own words where it gives them)."""
    if op.kind == ops.SCALAR:
        try:
            op.shape(*[Unknown(v.type) for v in bound if isinstance(v, Value)])
        except TypeError as exc:
            if str(exc):
                return str(exc)
        except (ValueError, KeyError, IndexError):
            pass
    return _RULE_REFUSED


@lru_cache(maxsize=4096)
def _scalar_types(op, types: tuple):
    declared = op.schema.returns
    try:
        inferred = op.shape(*[Unknown(t) for t in types])
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return list(inferred) if isinstance(inferred, tuple) and len(declared) > 1 else [inferred]


@lru_cache(maxsize=4096)
def _tensor_op_types(op, key: tuple) -> tuple:
    """A tensor op's output types: its type rule's dtypes (shapes are left to shape inference), the
    schema's types where the rule cannot say."""
    declared = list(op.schema.returns)
    try:
        inferred = op.shape(*[_meta_of(k) for k in key])
    except Exception:  # noqa: BLE001 - a shape rule that cannot decide leaves the schema's types
        inferred = None
    if not isinstance(inferred, (tuple, list)) or len(declared) == 1:
        inferred = [inferred]
    if len(inferred) != len(declared):
        inferred = [None] * len(declared)
    out = []
    for t, d in zip(inferred, declared):
        if isinstance(d, TensorType):
            # (a dtype argument known only at run time, `x.to(y.dtype)`, comes back as Unknown)
            known = isinstance(t, TensorType) and not isinstance(t.dtype, Unknown)
            out.append(TensorType(t.dtype, None) if known else TensorType())
        elif d == Scalar:
            out.append(t if t in (Int, Float, Bool) else Scalar)
        elif isinstance(t, Type) and fits(t, d):
            out.append(t)
        elif isinstance(d, ListType) and isinstance(d.elem, TensorType):
            out.append(ListType(TensorType()))
        else:
            out.append(d)
    return tuple(out)


@lru_cache(maxsize=None)
def _positional(op) -> list:
    return [p for p in op.schema.args if not p.kwarg_only]


@lru_cache(maxsize=None)
def _tensor_overloads(name: str, method: bool, namespaced: bool = False, aten: bool = False) -> tuple:
    """The tensor ops a call of `name` may mean, in the order calls try them."""
    if aten:
        return tuple(op for op in ops.overloads(name) if op.kind != ops.SCALAR)
    found = [op for op in ops.overloads(name) if op.kind != ops.SCALAR and (
        (op.method or _takes_self_tensor(op)) if method else op.function or namespaced and not op.method)]
    if name in ("max", "min"):
        found += ops.overloads("maximum" if name == "max" else "minimum")
    return tuple(found)


@lru_cache(maxsize=None)
def _python_overloads(name: str) -> tuple:
    """The SCALAR ops named `name` or `name.<overload>` (builtins.py's convention)."""
    return tuple(op for op in ops.overloads(name.split(".")[0]) if op.kind == ops.SCALAR and
                 (op.name == name or op.name.startswith(name + ".")))


def _takes_self_tensor(op) -> bool:
    """An op scripted code may call as a tensor method (x.new_zeros(...)) without a Python binding."""
    args = op.schema.args
    return bool(args) and args[0].name == "self" and args[0].is_tensor


_DTYPES = (DType, OptionalType(DType))  # where an int is a ScalarType number, in the second pass
