"""OpDef, the record that describes one op, and the schema-string parser."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from scriptc.return_types import result_type
from scriptc.types import (
    SCALAR_TYPES,
    DictType,
    ListType,
    ModuleType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    UnionType,
)

DTYPE = SCALAR_TYPES["ScalarType"]

POINTWISE = "pointwise"
REDUCTION = "reduction"
SHAPE = "shape"
OPAQUE = "opaque"
RANDOM = "random"
FACTORY = "factory"
SCALAR = "scalar"
KINDS = (POINTWISE, REDUCTION, SHAPE, OPAQUE, RANDOM, FACTORY, SCALAR)

# How an op's output dtype follows from its inputs (used by eager dispatch and shape rules):
PROMOTE = "promote"              # the promoted input dtype (add, mul, where)
PROMOTE_FLOAT = "promote_float"  # promoted, and integers become float32 (div, exp, sqrt)
COMPARE = "compare"              # computed in the promoted dtype, result bool (lt, eq)
TO_BOOL = "bool"                 # result bool, inputs as they are (logical_and)
KEEP = None                      # the kernel decides (shape ops, matmul, reductions)

# How an op may end a FusionGroup (OpDef.fusion_tail.form), in the terms the codegens implement:
REDUCE = "reduce"          # one value per row over some dims (sum, mean, amax...)
NORMALIZE = "normalize"    # same-shape output, normalized along one dim (softmax, log_softmax)
LAYER_NORM = "layer_norm"  # same-shape output, normalized over the last dims, then scaled and shifted


@dataclass(frozen=True)
class FusionTail:
    """An op's role at the end of a FusionGroup: the group computes its input elementwise and the
    kernel finishes with this. `combine` (REDUCE) is the scalar op that accumulates ("add", "mul",
    "max", "min"), `mean` divides by the count; `log` (NORMALIZE) makes a softmax a log_softmax."""
    form: str
    combine: str | None = None
    mean: bool = False
    log: bool = False


class SchemaError(ValueError):
    """A malformed schema string in the op table (a bug in scriptc, caught at import)."""


def parse_type(text: str) -> Type:
    """Parse a schema or IR type: `Tensor`, `int[]`, `Tensor?`, `List[int]`, `Tensor|Scalar`."""
    text = text.strip()
    if "|" in _top_level(text):
        return UnionType(tuple(parse_type(t) for t in _split_top(text, "|")))
    if text.endswith("?"):
        return OptionalType(parse_type(text[:-1]))
    if text.endswith("[]"):
        return ListType(parse_type(text[:-2]))
    if text == "Tensor":
        return TensorType()
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    if text.startswith("Module"):
        return ModuleType(text[7:-1] if text.startswith("Module(") else "")
    for prefix, build in (("List[", lambda a: ListType(a[0])),
                          ("Optional[", lambda a: OptionalType(a[0])),
                          ("Tuple[", lambda a: TupleType(tuple(a))),
                          ("Dict[", lambda a: DictType(a[0], a[1]))):
        if text.startswith(prefix) and text.endswith("]"):
            inner = text[len(prefix):-1]
            return build([parse_type(p) for p in _split_top(inner, ",")] if inner else [])
    raise SchemaError(f"unknown type {text!r}")


def _top_level(text: str) -> str:
    """`text` with everything inside brackets removed, to find top-level separators."""
    depth, out = 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_NO_DEFAULT = object()


def _is_tensor_list(t: Type) -> bool:
    return isinstance(t, ListType) and _mentions_tensor(t.elem)


def _mentions_tensor(t: Type) -> bool:
    if isinstance(t, TensorType):
        return True
    if isinstance(t, UnionType):
        return any(_mentions_tensor(o) for o in t.options)
    if isinstance(t, OptionalType):
        return _mentions_tensor(t.elem)
    return False


def takes_int_list(t: Type) -> bool:
    """Whether an argument of type `t` takes a list of ints (int[], or int|int[] as split's size)."""
    return str(t) == "List[int]" or isinstance(t, UnionType) and sorted(map(str, t.options)) == ["List[int]", "int"]


def _value_kind(t: Type) -> str | None:
    optional = isinstance(t, OptionalType)
    if optional:
        t = t.elem
    text = str(t)
    if isinstance(t, TensorType):
        kind = "tensor"
    elif isinstance(t, UnionType) and any(isinstance(o, TensorType) for o in t.options) and all(
            isinstance(o, TensorType) or str(o) in ("Scalar", "float", "int", "Optional[Scalar]")
            for o in t.options):
        optional = optional or any(isinstance(o, OptionalType) for o in t.options)
        kind = "tensor_or_number"
    elif text == "int":
        kind = "int"
    elif text == "bool":
        kind = "bool"
    elif text in ("float", "Scalar"):
        kind = "number"
    elif takes_int_list(t):
        kind = "int_list"
    else:
        return None
    return "optional_" + kind if optional else kind


@dataclass(frozen=True)
class Arg:
    name: str
    type: Type
    default: Any = _NO_DEFAULT
    kwarg_only: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    @property
    def is_tensor(self) -> bool:
        return isinstance(self.type, TensorType) or (
            isinstance(self.type, OptionalType) and isinstance(self.type.elem, TensorType))

    def __str__(self) -> str:
        text = f"{self.name}: {self.type}"
        if self.has_default:
            text += f" = {self.default!r}"
        return text


@dataclass(frozen=True)
class Schema:
    name: str
    args: tuple[Arg, ...]
    returns: tuple[Type, ...]

    def __str__(self) -> str:
        parts, star = [], False
        for a in self.args:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = ", ".join(str(r) for r in self.returns)
        if len(self.returns) != 1:
            rets = f"({rets})"
        return f"{self.name}({', '.join(parts)}) -> {rets}"


def parse_schema(text: str) -> Schema:
    """Parse `name(a: Tensor, b: Scalar = 1, *, out_dtype: ScalarType? = None) -> Tensor`."""
    try:
        head, _, ret = text.partition("->")
        name, _, arglist = head.strip().partition("(")
        arglist = arglist.rstrip().removesuffix(")")
        args, kwarg_only = [], False
        for part in _split_top(arglist, ","):
            if part == "*":
                kwarg_only = True
                continue
            decl, eq, default = part.partition("=")
            arg_name, _, type_text = decl.partition(":")
            value = ast.literal_eval(default.strip()) if eq else _NO_DEFAULT
            args.append(Arg(arg_name.strip(), parse_type(type_text), value, kwarg_only))
        ret = ret.strip()
        if ret.startswith("(") and ret.endswith(")"):
            returns = tuple(parse_type(r) for r in _split_top(ret[1:-1], ","))
        else:
            returns = (parse_type(ret),)
        return Schema(name.strip(), tuple(args), returns)
    except (ValueError, SyntaxError) as exc:
        raise SchemaError(f"bad schema {text!r}: {exc}") from None


@dataclass(eq=False)
class OpDef:
    """Everything scriptc knows about one op; see DESIGN.md, "The op table".

    kernel(xp, *args) computes it on arrays of the array module `xp`
    (numpy or cupy), args in schema order. shape(*args) maps input types
    (TensorType for tensors, the value or None for others) to output types.
    grad(ctx, grad_output) returns one gradient per schema argument (None
    where there is none); ctx has the call's arguments by name and `out`.
    scalar(*exprs) gives the elementwise expression both codegens lower.

    Fusion roles (passes/fuse.py, the kernel spec and the backends read these, never op names):
    `fusion_head`: a library op (BLAS) that may start a FusionGroup, its pointwise consumers fused
    as the group's epilogue; `head_floor`: as a head, its native kernel can apply a ReLU (a floor)
    as it stores; `fusion_tail`: how the op may end a group (FusionTail). Pointwise ops with a
    `scalar` are the groups' elementwise members.

    On complex tensors, grad follows PyTorch's conjugate Wirtinger convention: a formula written as
    `g * f'(z)` (every holomorphic op, and every linear one) is applied as `g * conj(f'(z))` by
    autograd; `complex_aware=True` says the formula already handles complex inputs itself (abs,
    angle, real, vdot, the decompositions).
    """

    schema: Schema
    kind: str
    kernel: Callable
    shape: Callable
    dtype_rule: str | None = KEEP
    grad: Callable | None = None
    save: tuple[str, ...] = ()
    # A saved argument that only the gradients of the named inputs read (mul's self, for other's): as
    # torch saves it only when one of them needs a gradient, an in-place write to it after the call is
    # an error only then.
    saved_for: dict[str, tuple[str, ...]] = field(default_factory=dict)
    scalar: Callable | None = None
    view: bool = False
    aux: bool = False
    mutates: tuple[str, ...] = ()
    mutates_when: str | None = None  # the bool argument that must be true for `mutates` to happen
    effects: bool = False  # acts outside its arguments (print, thread settings): never dropped or merged
    method: bool = True
    function: bool = True
    functional: bool = False
    complex_aware: bool = False
    result_names: tuple[str, ...] = ()  # names of a tuple result's fields (torch.return_types.<name>)
    nondifferentiable_outputs: tuple[int, ...] = ()  # outputs that never carry a gradient (lstsq's rank)
    # The eager result takes the channels-last layout of its first two tensor arguments, as torch's
    # (convolutions, pools, resampling, group_norm: ops/layout.py); kernels compute row-major.
    keeps_layout: bool = False
    # What an eager call returns, from its arguments and output tensors, where that is not simply the
    # outputs: torch.unique's flags pick among its three, nonzero(as_tuple=True) splits its one.
    python_result: Callable | None = None
    inplace: "OpDef | None" = None
    inplace_of: "OpDef | None" = None
    # On an in-place variant: check(target array) raising torch's error where the `name_` form refuses a
    # target dtype the pure op accepts (float_power_ needs a float64/complex128 target).
    inplace_check: Callable | None = None
    # check(arrays) raising torch's error for operands it refuses by their own dtypes, before they are
    # promoted (sub of a bool tensor)
    argument_check: Callable | None = None
    # Set by real_only.py: torch's kernel name, or (exception type, message), for the error a complex input raises.
    real_only: Any = None
    # Set by float_only.py: (the numpy dtypes torch refuses for this op, torch's kernel name or (exception
    # type, message), the indices of the arguments checked), for an op torch computes on floating (and
    # maybe integer) inputs only.
    float_only: Any = None
    doc: str = ""
    # takes quantized tensors (scriptc/ops/quantized.py); views take them too, other ops refuse them
    accepts_quantized: bool = False
    fusion_head: bool = False
    head_floor: bool = False
    fusion_tail: FusionTail | None = None
    # The name torch gives this call's autograd Node (`grad_fn`) where it is not <Op>Backward0: a
    # string, or a function of the call's SavedContext (sum over dims is SumBackward1) that may answer
    # None for the default.
    grad_fn_name: str | Callable | None = None
    arg_index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        self.arg_index = {a.name: i for i, a in enumerate(self.schema.args)}
        # The named tuple eager calls return, as torch.return_types.<op> (`max(x, 1).values`).
        self.result_tuple = result_type(self.base_name, self.result_names) if self.result_names else None
        self.tensor_args = tuple(i for i, a in enumerate(self.schema.args) if a.is_tensor)
        self.tensor_list_args = tuple(i for i, a in enumerate(self.schema.args) if _is_tensor_list(a.type))
        # The arguments eager dispatch checks the Python type of on every call (a Tensor, a number, an int,
        # a bool, a list of ints, or None where the schema says so): (index, kind), kinds as
        # scriptc.tensors.arguments names them.
        self.value_args = tuple((i, kind) for i, a in enumerate(self.schema.args)
                                if (kind := _value_kind(a.type)) is not None)
        # value_args as (index, the Python types that pass), set on the op's first eager call
        self.value_types = None
        # The arguments whose dtypes decide the result dtype (a where's condition or a mask does not).
        self.promote_args = tuple(i for i, a in enumerate(self.schema.args)
                                  if _mentions_tensor(a.type) and a.name not in ("condition", "mask"))
        # Every argument that may be an array (a storage dtype such as bfloat16 is looked for there),
        # and every dtype argument.
        self.array_args = tuple(i for i, a in enumerate(self.schema.args) if _mentions_tensor(a.type))
        self.dtype_args = tuple(i for i, a in enumerate(self.schema.args)
                                if a.type == DTYPE or a.type == OptionalType(DTYPE))
        # A factory's device argument (where its result is made: the meta device makes no data).
        self.device_arg = next((i for i, a in enumerate(self.schema.args) if a.name == "device"), None)

    @property
    def name(self) -> str:
        return self.schema.name

    @property
    def base_name(self) -> str:
        return self.schema.name.split(".")[0]

    @property
    def differentiable(self) -> bool:
        return self.grad is not None

    @property
    def has_side_effects(self) -> bool:
        return bool(self.mutates) or self.effects or self.kind == RANDOM or self.inplace_of is not None

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """Arguments in schema order, defaults filled; TypeError naming the schema if they don't fit."""
        params = self.schema.args
        positional = sum(1 for p in params if not p.kwarg_only)
        if len(args) > positional:
            raise TypeError(f"{self.name}() takes {positional} positional arguments but {len(args)} were given\n"
                            f"  schema: {self.schema}")
        bound = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                bound.append(kwargs[p.name])
            elif p.has_default:
                bound.append(p.default)
            else:
                raise TypeError(f"{self.name}() missing required argument '{p.name}'\n"
                                f"  schema: {self.schema}")
        extra = set(kwargs) - {p.name for p in params[len(args):]}
        if extra:
            raise TypeError(f"{self.name}() got an unexpected keyword argument '{sorted(extra)[0]}'\n"
                            f"  schema: {self.schema}")
        return tuple(bound)
