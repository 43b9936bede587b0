"""Python bindings generated from the op table: `scriptc.<op>` functions, Tensor methods, operators.

Each binding is a plain function with the op's schema as its signature, built
once at import, so a call costs one Python call plus `tensor.call`.
"""

from __future__ import annotations

import keyword

from scriptc import ops
from scriptc.ops import operators
from scriptc.ops.generator import Generator
from scriptc.ops.schema import FACTORY, RANDOM, Arg, OpDef
from scriptc.out_argument import into_out, takes_out
from scriptc.tensors import Tensor, _size_arg, call, call_inplace, check_device_arg
from scriptc.tensors.arguments import argument_error
from scriptc.types import ListType, OptionalType, Scalar, ScalarType, TensorType, UnionType

# Methods and functions whose first list argument may also be given as varargs: x.view(2, 3), zeros(2, 3).
_VARARG_LISTS = {"view", "reshape", "permute", "expand", "repeat", "flip", "zeros", "ones", "empty", "rand",
                 "randn", "einsum", "chain_matmul", "tile", "meshgrid", "broadcast_tensors", "block_diag",
                 "cartesian_prod"}
# Other public names an overloaded name falls back to: max(a, b) is maximum(a, b).
_ALIASES = {"max": ["maximum"], "min": ["minimum"]}


def _param_name(arg: Arg) -> str:
    return arg.name + "_" if keyword.iskeyword(arg.name) else arg.name


def _signature(op: OpDef, as_method: bool) -> tuple[str, str]:
    """(parameter list, argument tuple expression) for a generated binding."""
    params, values, star = [], [], False
    args = op.schema.args
    vararg = op.base_name in _VARARG_LISTS and _first_list_arg(op) is not None
    for i, a in enumerate(args):
        name = _param_name(a)
        if vararg and i == _first_list_arg(op):
            # zeros(2, 3), zeros((2, 3)) and zeros(size=(2, 3)) all work, as in torch.
            params += [f"*{name}_items", f"{name}=None"]
            if str(a.type) == "List[int]":
                values.append(f"_required_sizes({op.base_name!r}, {a.name!r}, {name}_items, {name})")
            else:
                values.append(f"_size_arg({name}_items if {name} is None else ({name},))")
            star = True
            continue
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(f"{name}={a.default!r}" if a.has_default else name)
        values.append(name)
    if makes_tensors(op) and not any(a.name == "requires_grad" for a in args):
        if not star:
            params.append("*")
        params.append("requires_grad=False")
        if not any(a.name == "layout" for a in args):
            params.append("layout=None")
        if not any(a.name == "pin_memory" for a in args):
            params.append("pin_memory=False")
    return ", ".join(params), "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"


def _required_sizes(function: str, arg: str, items: tuple, value) -> list:
    """The sizes given as varargs (`zeros(2, 3)`) or as one sequence; torch's TypeError when none were."""
    if value is None and not items:
        raise TypeError(f'{function}() missing 1 required positional arguments: "{arg}"')
    return _size_arg(items if value is None else (value,))


def makes_tensors(op: OpDef) -> bool:
    """Factories (zeros, rand_like, randperm...) take torch's requires_grad=, layout=, pin_memory= too."""
    return op.kind in (FACTORY, RANDOM) and any(a.name == "dtype" for a in op.schema.args)


def _first_list_arg(op: OpDef):
    for i, a in enumerate(op.schema.args):
        if isinstance(a.type, ListType) and not a.has_default:
            return i
    return None


def _make(op: OpDef, as_method: bool):
    params, values = _signature(op, as_method)
    runner = "call_inplace" if op.inplace_of is not None else "call"
    body = f"    result = {runner}(_op, {values})\n"
    if makes_tensors(op):
        names = {a.name for a in op.schema.args}
        checked = ", ".join(["device" if "device" in names else "None", "pin_memory"])
        body = f"    _check_device_arg({checked})\n" + body
        body += "    if requires_grad:\n        result.requires_grad_(True)\n"
    if not as_method and takes_out(op):
        starred = any(p.strip().startswith("*") for p in params.split(","))
        params = ", ".join(p for p in (params, "" if starred else "*", "out=None") if p)
        body = f"    if out is not None:\n        return _into_out(_op, {values}, out)\n" + body
    source = f"def {op.base_name}({params}):\n{body}    return result\n"
    namespace = {"_op": op, "call": call, "call_inplace": call_inplace, "_size_arg": _size_arg,
                 "_required_sizes": _required_sizes,
                 "_check_device_arg": check_device_arg, "_into_out": into_out}
    exec(compile(source, f"<scriptc binding {op.name}>", "exec"), namespace)
    fn = namespace[op.base_name]
    fn.__doc__ = f"{op.schema}\n\n{op.doc}".strip()
    fn.__qualname__ = ("Tensor." if as_method else "") + op.base_name
    fn.__module__ = "scriptc"
    fn._scriptc_op = op.base_name  # jit.script calls the op by schema, not this function
    return fn


def _accepts(t, value) -> bool:
    """A cheap check that `value` fits schema type `t`, to pick an overload."""
    if isinstance(t, TensorType):
        return isinstance(value, Tensor)
    if isinstance(t, OptionalType):
        return value is None or _accepts(t.elem, value)
    if isinstance(t, UnionType):
        return any(_accepts(o, value) for o in t.options)
    if isinstance(t, ListType):
        return isinstance(value, (list, tuple)) or (t.elem.__class__ is ScalarType and isinstance(value, int))
    if t is Scalar:
        return isinstance(value, (int, float, complex)) and not isinstance(value, Tensor)
    if isinstance(t, ScalarType):
        if t.name == "int":  # (a numpy integer too: anything with __index__)
            return isinstance(value, int) or hasattr(type(value), "__index__") and not isinstance(value, Tensor)
        if t.name == "float":
            return isinstance(value, (int, float))
        if t.name == "bool":
            return isinstance(value, bool)
        if t.name == "str":
            return isinstance(value, str)
        if t.name == "Generator":
            return isinstance(value, Generator)
    return True


def _overloaded(name: str, candidates: list[OpDef], as_method: bool):
    def dispatch(*args, **kwargs):
        out = None if as_method else kwargs.pop("out", None)  # (torch's methods take no out=)
        for op in candidates:
            try:
                bound = op.bind(args, kwargs)
            except TypeError:
                continue
            if all(_accepts(a.type, v) for a, v in zip(op.schema.args, bound)):
                if out is not None and takes_out(op):
                    return into_out(op, bound, out)
                if out is not None:
                    continue
                return call_inplace(op, bound) if op.inplace_of is not None else call(op, bound)
        if args and not isinstance(args[0], Tensor) and all(
                op.schema.args and isinstance(op.schema.args[0].type, TensorType) for op in candidates):
            raise argument_error(candidates[0], 0, args[0])
        schemas = "\n  ".join(str(op.schema) for op in candidates)
        raise TypeError(f"{name}() received an invalid combination of arguments; it accepts:\n  {schemas}")
    dispatch.__name__ = name
    dispatch._scriptc_op = name
    dispatch.__doc__ = "\n".join(str(op.schema) for op in candidates)
    return dispatch


def overloaded_function(name: str, candidates: list[OpDef]):
    """A function calling the first of the ops `candidates` the arguments fit (torch.ops.aten's)."""
    return _overloaded(name, candidates, as_method=False)


def _public(filter_attr: str) -> dict:
    groups: dict[str, list[OpDef]] = {}
    for op in ops.all_ops():
        if getattr(op, filter_attr):
            groups.setdefault(op.base_name, []).append(op)
    out = {}
    for name, group in groups.items():
        candidates = group + [ops.OPS[a] for a in _ALIASES.get(name, [])]
        as_method = filter_attr == "method"
        out[name] = _make(group[0], as_method) if len(candidates) == 1 else _overloaded(name, candidates, as_method)
    for name, target in ops.ALIASES.items():
        if target in out:
            out[name] = out[target]
    return out


def namespace(prefix: str, module: str) -> dict:
    """The functions of a torch namespace (`torch.linalg`, `torch.fft`) from the ops named with its
    prefix as in ATen (`linalg_inv` is `torch.linalg.inv`), keyed by their names there."""
    out = {}
    for op in ops.all_ops():
        if op.base_name.startswith(prefix) and op.inplace_of is None:
            fn = _make(op, as_method=False)
            fn.__name__ = fn.__qualname__ = op.base_name[len(prefix):]
            fn.__module__ = module
            out[fn.__name__] = fn
    return out


FUNCTIONS = _public("function")
METHODS = _public("method")
for _name, _fn in METHODS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)


def _defaults_after_two(op: OpDef) -> tuple:
    return tuple(a.default for a in op.schema.args[2:])


def _reflected(op: OpDef):
    rest = _defaults_after_two(op)

    def method(self, other):
        return call(op, (other, self) + rest)
    return method


def _forward(op: OpDef):
    rest = _defaults_after_two(op)

    def method(self, other):
        return call(op, (self, other) + rest)
    return method


def _inplace(op: OpDef):
    rest = _defaults_after_two(op)

    def method(self, other):
        return call_inplace(op, (self, other) + rest)
    return method


for _operator in operators.BINARY.values():
    _op = ops.OPS.get(_operator.tensor) if _operator.tensor else None
    if _op is None:
        continue  # no tensor op yet for this operator
    setattr(Tensor, f"__{_operator.dunder}__", _forward(_op))
    # 2 * x records mul(x, 2): commutative ops keep the tensor first, as their schemas require.
    setattr(Tensor, f"__r{_operator.dunder}__", _forward(_op) if _operator.commutative else _reflected(_op))
    if _op.inplace is not None:
        setattr(Tensor, f"__i{_operator.dunder}__", _inplace(_op.inplace))
for _operator in operators.COMPARE.values():
    setattr(Tensor, f"__{_operator.dunder}__", _forward(ops.OPS[_operator.tensor]))
Tensor.__neg__ = lambda self: call(ops.OPS[operators.UNARY["-"].tensor], (self,))
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: call(ops.OPS["abs"], (self,))
Tensor.__invert__ = lambda self: call(ops.OPS[operators.UNARY["~"].tensor], (self,))
Tensor.__hash__ = object.__hash__
