"""The kernel spec: what a FusionGroup computes, in a form both backends (LLVM, CUDA) lower.

A spec lists the group's tensor and scalar inputs, one typed scalar expression per value the
group computes elementwise (built from each op's `scalar` entry in the op table), which of them
are outputs, and optionally a Head (an op whose OpDef is a `fusion_head`: a BLAS product run before
the elementwise part) and a Tail (an op's `fusion_tail`: a reduction over adjacent dims, a
normalization along any dim, a layer_norm over the last dims).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from scriptc import ops
from scriptc.ir.graph import Node, Value
from scriptc.ops import expr as E
from scriptc.ops.rules import promote_types
from scriptc.ops.schema import COMPARE, LAYER_NORM, NORMALIZE, TO_BOOL, FusionTail
from scriptc.passes.analysis import SIZE_OPS, trailing_sizes
from scriptc.types import Bool, TensorType, bool_

class Unsupported(Exception):
    """The group cannot be compiled by this backend; the executor runs its subgraph instead."""


@dataclass
class KernelInput:
    kind: str                 # "tensor" or "scalar"
    dtype: str                # numpy dtype name
    rank: int = 0
    broadcast: tuple = ()     # dims of size 1 (from the guard)


@dataclass(frozen=True)
class Head:
    """The library op a group runs before its kernel (an OpDef.fusion_head): per argument of the op,
    the group input it reads (`inputs`, None for a constant) or its constant value (`constants`);
    the kernel reads its result as input `result`."""
    op: str
    inputs: tuple
    constants: tuple
    result: int


@dataclass(frozen=True)
class Tail:
    """What the kernel ends with: op's FusionTail (`role`) applied to exprs[value]. REDUCE: over
    `dim` (the first of adjacent dims, merged into one by then: KernelSpec.notes["merge"]), keeping
    it or not; NORMALIZE: along `dim`; LAYER_NORM: over the last dim (merged), with `eps` and the
    inputs that hold the weight and bias (or None)."""
    op: str
    role: FusionTail
    value: int
    dim: int | None = None
    keepdim: bool = False
    eps: float = 0.0
    weight: int | None = None
    bias: int | None = None

    @property
    def form(self) -> str:
        return self.role.form


@dataclass
class KernelSpec:
    inputs: list[KernelInput]
    rank: int                                  # rank of the iteration space
    exprs: list[tuple[E.Expr, str]]            # (expression, result dtype) per computed value
    outputs: list[int]                         # indices into exprs that the group returns
    tail: Tail | None = None
    # notes["merge"]: (first, last) when a reduction (or layer_norm) spans adjacent dims first..last:
    # the spec's rank, inputs and tail dim are then those of the iteration space with those dims as one.
    # notes["then"]: (dims, keepdim) when the reduction also spans dims before the kernel's (not
    # adjacent to them): the kernel keeps its dims, and the runtime reduces these dims of its result.
    head: Head | None = None
    key: str = ""
    notes: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return "scriptc_" + self.key[:16]

    @property
    def used_inputs(self) -> list[int]:
        """The inputs the kernel reads (a BLAS head's own inputs are read by the head, not the kernel)."""
        return self.notes.get("used_inputs", list(range(len(self.inputs))))

    @property
    def head_bounds(self) -> tuple[float | None, float | None, float | None] | None:
        """(c, None, None) where all the group does after its head is maximum(head's float result, c)
        (a ReLU, c = 0), (c, d, None) where it is minimum(maximum(result, c), d) (a ReLU6, hardtanh or
        clamp), (None, None, a) where it is where(result > 0, result, result * a) (a LeakyReLU of
        slope a): what the head can apply as it writes its result (native/heads.py); else None."""
        if self.head is None or self.tail is not None or self.outputs != [0] or len(self.exprs) != 1:
            return None
        expr, dtype = self.exprs[0]
        if dtype not in ("float32", "float64") or self.inputs[self.head.result].dtype != dtype:
            return None

        def is_result(value):
            if value.op == "cast" and value.value == dtype:
                value = value.args[0]
            return value.op == "var" and value.value == self.head.result

        def constant(value):
            """The float of a finite or infinite constant; None for anything else (a NaN bound makes
            every result NaN: left to the kernel)."""
            if value.op != "const" or type(value.value) not in (int, float) or value.value != value.value:
                return None
            return float(value.value)
        if expr.op == "select":
            test, kept, other = expr.args
            if test.op != "gt" or not is_result(test.args[0]) or constant(test.args[1]) != 0 or \
                    not is_result(kept) or other.op != "mul":
                return None
            value, slope = other.args if is_result(other.args[0]) else other.args[::-1]
            slope = constant(slope)
            return (None, None, slope) if is_result(value) and slope is not None and abs(slope) != np.inf else None
        ceiling = None
        if expr.op == "min":
            expr, ceiling = expr.args
            ceiling = constant(ceiling)
            if ceiling is None:
                return None
        if expr.op != "max" or not is_result(expr.args[0]):
            return None
        floor = constant(expr.args[1])
        return None if floor is None else (floor, ceiling, None)

    @property
    def flat(self) -> bool:
        """No input broadcasts and there is no tail: the kernel is one loop over all elements (unless
        notes["strided"] asks for rows with strides, for inputs that are views)."""
        return not self.notes.get("strided") and self.tail is None and all(self.inputs[k].kind == "scalar" or (
            not self.inputs[k].broadcast and self.inputs[k].rank == self.rank) for k in self.used_inputs)


def _compute_dtype(op, node: Node) -> str:
    out = node.outputs[0].type.dtype
    if op.dtype_rule == COMPARE:
        metas = [v.type if isinstance(v.type, TensorType) else _scalar_meta(v) for v in node.inputs]
        d = promote_types([metas[i] for i in op.promote_args])
        if d is None:
            raise Unsupported(f"{node.op}: unknown input dtypes")
        return d.np.name
    if op.dtype_rule == TO_BOOL:
        return "bool"
    return out.np.name


def _scalar_meta(v: Value):
    if v.node is not None and v.node.op == "prim::Constant":
        return v.node.attrs["value"]
    return {"int": 1, "float": 1.0, "bool": True}.get(str(v.type), 1.0)


# a scalar group input stands for any value of its type: the one an op's check is likeliest to refuse
_WORST_SCALARS = {"int": -1, "float": -1.0, "bool": True}


def _check_arguments(op, node: Node, value_expr: dict) -> None:
    """Unsupported where the op's argument check (the errors eager raises: a bool tensor subtracted,
    an integer tensor to a negative power) refuses the node's typed arguments, or may refuse a
    scalar input's value: the group then runs its reference, which raises as eager does."""
    if op.argument_check is None:
        return
    probes = []
    for v in node.inputs:
        if isinstance(v.type, TensorType):
            probes.append(np.empty((), v.type.dtype.np))
        elif v.node is not None and v.node.op == "prim::Constant":
            probes.append(v.node.attrs["value"])
        else:
            probes.append(_WORST_SCALARS.get(str(v.type), value_expr.get(id(v))))
    try:
        op.argument_check(probes)
    except Exception as exc:  # noqa: BLE001 - any refusal: the reference raises it
        raise Unsupported(f"{node.op}: {exc}") from None


def build_spec(group: Node) -> KernelSpec:
    """Turn a prim::FusionGroup into a KernelSpec (raises Unsupported for what codegen can't do)."""
    body = group.blocks[0]
    guards = group.attrs.get("guard") or []
    inputs: list[KernelInput] = []
    env: dict[int, object] = {}
    for i, (p, g) in enumerate(zip(body.params, guards)):
        if g[0] == "scalar":
            inputs.append(KernelInput("scalar", {"int": "int64", "float": "float64", "bool": "bool"}.get(g[1], "float64")))
        else:
            inputs.append(KernelInput("tensor", np.dtype(g[0]).name, int(g[1]), tuple(g[2])))
        env[id(p)] = ("input", i)
    exprs: list[tuple[E.Expr, str]] = []
    value_expr: dict[int, E.Expr] = {}
    head = tail = merge = then = None
    nodes = list(body)
    rank = None
    for node in nodes:
        if node.op == "prim::Constant":
            value_expr[id(node.output)] = node.attrs["value"]
            continue
        if node.op in SIZE_OPS:
            continue  # (a layer_norm's normalized_shape from its input's sizes: _tail reads how many)
        op = ops.OPS.get(node.op)
        if op is None:
            raise Unsupported(node.op)
        out_type = node.outputs[0].type
        # The iteration space is the broadcast of every pointwise result: the largest rank among them
        # (sqrt of a 0-d tensor, then a [2, 16] divided by it, iterates [2, 16]).
        if head is None and isinstance(out_type, TensorType) and out_type.shape is not None:
            rank = max(rank or 0, len(out_type.shape))
        if op.fusion_head and head is None and not exprs:
            inputs.append(KernelInput("tensor", out_type.dtype.np.name, len(out_type.shape), ()))
            head = Head(node.op, tuple(env[id(v)][1] if id(v) in env else None for v in node.inputs),
                        tuple(value_expr.get(id(v)) for v in node.inputs), len(inputs) - 1)
            env[id(node.outputs[0])] = ("input", head.result)
            rank = len(out_type.shape)
            continue
        if op.fusion_tail is not None:
            if node is not nodes[-1]:
                raise Unsupported("a reduction must end the group")
            rank = len(node.inputs[0].type.shape)  # a reduction iterates over its input, not its output
            tail, merge, then = _tail(node, op, env, value_expr, exprs)
            continue
        if op.kind != ops.POINTWISE or op.scalar is None:
            raise Unsupported(node.op)
        _check_arguments(op, node, value_expr)
        if node.op.startswith("bitwise_") and out_type.dtype is not bool_:
            raise Unsupported("bitwise ops on integers")
        compute = _compute_dtype(op, node)
        args = []
        for arg, v in zip(op.schema.args, node.inputs):
            if id(v) in env:
                kind, index = env[id(v)]
                e = E.var(index) if kind == "input" else value_expr[id(v)]
                args.append(E.cast(e, compute) if _numeric(arg, v) else e)
            elif id(v) in value_expr:
                const = value_expr[id(v)]
                if isinstance(const, (bool, int, float)) and not isinstance(const, bool) and _numeric(arg, v):
                    args.append(E.lift(float(const) if compute.startswith("float") else const))
                elif isinstance(const, bool) and _numeric(arg, v):
                    args.append(E.lift(const))
                else:
                    args.append(const)
            else:
                raise Unsupported(f"{node.op}: input from outside the group")
        result = op.scalar(*args)
        out_dtype = out_type.dtype.np.name
        if out_dtype != _expr_result_dtype(op, compute):
            result = E.cast(result, out_dtype)
        exprs.append((result, out_dtype))
        value_expr[id(node.outputs[0])] = result
        env[id(node.outputs[0])] = ("expr", len(exprs) - 1)
    outputs = []
    for r in body.returns:
        if tail is not None and r is nodes[-1].outputs[0]:
            continue
        if id(r) not in env or env[id(r)][0] != "expr":
            raise Unsupported("the group returns a value it does not compute")
        outputs.append(env[id(r)][1])
    if tail is not None and outputs:
        raise Unsupported("a reduction group that also returns its intermediate values")
    used = {n.value for n in E.walk(*[e for e, _ in exprs]) if n.op == "var"}  # (one walk: exprs share subtrees)
    if tail is not None and tail.form == LAYER_NORM:
        used |= {i for i in (tail.weight, tail.bias) if i is not None}
    if tail is not None and merge is not None and merge[1] > merge[0]:
        # adjacent dims reduce (or normalize) as one: the kernel sees them merged
        inputs = [_merged_input(inp, rank, merge, i in used) for i, inp in enumerate(inputs)]
        rank -= merge[1] - merge[0]
    else:
        merge = None
    spec = KernelSpec(inputs, rank or 0, exprs, outputs, tail, head)
    spec.notes["merge"] = merge
    spec.notes["then"] = then
    spec.notes["used_inputs"] = sorted(used)  # the inputs the elementwise part reads (not the head's)
    spec.key = hashlib.sha256(repr((spec.inputs, spec.rank, spec.exprs, spec.outputs, spec.tail,
                                    head and (head.op, head.inputs, _freeze(head.constants)))).encode()).hexdigest()
    return spec


def merge_dims(shape: tuple, merge: tuple[int, int] | None) -> tuple:
    """`shape` with dims merge[0]..merge[1] as one (their product); as it is for None."""
    if merge is None:
        return tuple(shape)
    first, last = merge
    size = 1
    for d in shape[first:last + 1]:
        size *= d
    return tuple(shape[:first]) + (size,) + tuple(shape[last + 1:])


def _merged_input(inp: KernelInput, rank: int, merge: tuple[int, int], read: bool = True) -> KernelInput:
    """A tensor input as the kernel sees it once the iteration dims in `merge` are one: the dims
    merge only if the input broadcasts over all of them or over none (else no stride walks them).
    An input the kernel does not `read` (a head's conv bias) only takes the merged rank."""
    if inp.kind != "tensor":
        return inp
    offset = rank - inp.rank  # inputs are right-aligned in the iteration space
    first, last = merge[0] - offset, merge[1] - offset
    if last < 0:
        return inp  # the input starts after the merged dims
    broadcast = [d < 0 or d in inp.broadcast for d in range(first, last + 1)]
    if any(broadcast) and not all(broadcast):
        if read:
            raise Unsupported("an input broadcasts over some of the reduced dims but not all")
        broadcast = [True] * len(broadcast)
    if first < 0:  # it starts inside the merged dims, broadcasting over all of them: it starts at the merged dim
        return KernelInput("tensor", inp.dtype, inp.rank - last, tuple(sorted({
            0 if d <= last else d - last for d in inp.broadcast})))
    kept = tuple(d for d in inp.broadcast if d < first) + ((first,) if broadcast[0] else ()) + tuple(
        d - (last - first) for d in inp.broadcast if d > last)
    return KernelInput("tensor", inp.dtype, inp.rank - (last - first), kept)


def _freeze(values):
    return [repr(v) if not isinstance(v, np.ndarray) else ("array", v.shape, v.dtype.str, v.tobytes()[:64])
            for v in values]


def _numeric(arg, v: Value) -> bool:
    t = str(arg.type)
    return ("Tensor" in t or "Scalar" in t) and arg.name not in ("condition", "mask") and \
        (isinstance(v.type, TensorType) or v.type != Bool or "Scalar" in t)


def _expr_result_dtype(op, compute: str) -> str:
    if op.dtype_rule in (COMPARE, TO_BOOL):
        return "bool"
    return compute


def _tail(node: Node, op, env, value_expr, exprs) -> tuple:
    """(the Tail, merge, then) for the op that ends a group: `merge` is (first, last) of the adjacent
    dims a reduction (or layer_norm) spans, `then` what KernelSpec.notes["then"] says."""
    source = node.inputs[0]
    if id(source) not in env:
        raise Unsupported("reduction input comes from outside")
    kind, index = env[id(source)]
    src = E.var(index) if kind == "input" else value_expr[id(source)]
    rank = len(source.type.shape)
    dtype = node.outputs[0].type.dtype.np.name
    role = op.fusion_tail

    def argument(name: str):
        v = node.inputs[op.arg_index[name]]
        return value_expr.get(id(v), "tensor" if id(v) in env else None)

    if role.form == NORMALIZE:
        dim, out_dtype = argument("dim"), argument("dtype")
        if out_dtype is not None or not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
            raise Unsupported("softmax with a dtype, or over a dim that is not a constant int")
        exprs.append((src, dtype))
        return Tail(node.op, role, len(exprs) - 1, dim=dim % rank), None, None
    if role.form == LAYER_NORM:
        shape_value = argument("normalized_shape")
        if shape_value is None:  # the input's own last sizes: only how many counts
            count = trailing_sizes(node.inputs[op.arg_index["normalized_shape"]], source)
            shape_value = [None] * count if count is not None else None
        if not isinstance(shape_value, list) or not 1 <= len(shape_value) <= rank:
            raise Unsupported("layer_norm with a normalized_shape that is not a constant list")
        weight, bias = (node.inputs[op.arg_index[name]] for name in ("weight", "bias"))
        exprs.append((src, dtype))
        return Tail(node.op, role, len(exprs) - 1, eps=float(argument("eps")),
                    weight=env[id(weight)][1] if id(weight) in env else None,
                    bias=env[id(bias)][1] if id(bias) in env else None), (rank - len(shape_value), rank - 1), None
    dims, keepdim = argument("dim"), argument("keepdim")
    if "dtype" in op.arg_index and argument("dtype") is not None:
        raise Unsupported("reduction with a dtype argument")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        dims = list(range(rank))  # all of them (amax's [] too)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not rank or not all(isinstance(d, int) and -rank <= d < rank for d in dims) or not isinstance(keepdim, bool):
        raise Unsupported("a reduction's dims must be constant ints")
    dims = sorted(d % rank for d in dims)
    if len(set(dims)) != len(dims):
        raise Unsupported("a reduction over a repeated dim")
    if dtype == "bool" or node.inputs[0].type.dtype is bool_:
        raise Unsupported("bool reductions")
    exprs.append((src, dtype))
    first = dims[-1]
    while first - 1 in dims:
        first -= 1
    if first == dims[0]:
        return Tail(node.op, role, len(exprs) - 1, dim=first, keepdim=keepdim), (first, dims[-1]), None
    # Dims that are not adjacent: the kernel reduces the last run of adjacent ones, keeping them, and
    # the executor reduces the rest of the (smaller) result with numpy - x.sum((0, 2, 3)) is
    # x.sum((2, 3), keepdim=True).sum(0) - which holds for every one of these reductions (a mean's
    # parts have equal sizes).
    return (Tail(node.op, role, len(exprs) - 1, dim=first, keepdim=True), (first, dims[-1]),
            (tuple(d for d in dims if d < first), keepdim))
