"""canonicalize: algebraic peepholes, a table of small named rules run to a fixpoint.

Each rule looks at one node and returns the Value that replaces its output, or None. A rule only
fires when the result provably has the same dtype and shape as the output it replaces, and the same
memory layout where a later op can tell (a `view` of a non-contiguous value raises): the IR does not
track layout, so `contiguous` always stays, and only views fold into a later reshape.
"""

from __future__ import annotations

from typing import Callable

from scriptc.ir.graph import Graph, Node, Value, walk
from scriptc.types import Bool, Int, ListType, NoneType, TensorType

from .analysis import constant_value, is_constant, op_of
from .shape_infer import accepts_every_rank, keeps_rank, possible_ranks


def _const(v: Value, *values) -> bool:
    return is_constant(v) and not isinstance(constant_value(v), bool) and any(
        type(constant_value(v)) in (int, float) and constant_value(v) == x for x in values)


def _same_type(a: Value, b: Value) -> bool:
    """Both are tensors of one known dtype and one known shape."""
    ta, tb = a.type, b.type
    return (isinstance(ta, TensorType) and isinstance(tb, TensorType) and ta.dtype is not None
            and ta.dtype is tb.dtype and ta.shape is not None and ta.shape == tb.shape)


def _identity_with(op: str, position: int, neutral) -> Callable[[Node], Value | None]:
    def rule(node: Node):
        if node.op != op:
            return None
        other = node.inputs[1 - position]
        if _const(node.inputs[position], neutral) and (op not in ("add", "sub") or position == 1) \
                and _same_type(other, node.output):
            return other
        return None
    return rule


def _double(op: str) -> Callable[[Node], Value | None]:
    def rule(node: Node):
        if node.op != op:
            return None
        inner = node.inputs[0].node
        if inner is not None and inner.op == op and _same_type(inner.inputs[0], node.output):
            if op == "transpose" and {_c(node.inputs[1]), _c(node.inputs[2])} != {_c(inner.inputs[1]),
                                                                                   _c(inner.inputs[2])}:
                return None
            return inner.inputs[0]
        return None
    return rule


def _c(v: Value):
    return constant_value(v) if is_constant(v) else object()


def _reshape_chain(node: Node):
    """reshape(view(x, a), b) -> reshape(x, b) (or view): only the final shape matters. The inner op
    must be a view: an inner reshape may have copied x, and a view of that copy can succeed where a
    view of x (transposed, say) raises."""
    if node.op not in ("reshape", "view"):
        return None
    inner = node.inputs[0].node
    if inner is not None and inner.op == "view" and len(inner.output.uses) == 1:
        node.set_input(0, inner.inputs[0])
        return None
    return None


def _noop_reshape(node: Node):
    """reshape/view/expand to the shape it has, a cast to the dtype it has: the value itself. Not
    contiguous (whether it copies depends on a layout the IR does not know), nor clone (a copy must
    stay one when either side is later written to)."""
    if node.op in ("reshape", "view", "to.dtype", "expand") and _same_type(node.inputs[0], node.output):
        return node.inputs[0]
    return None


def _eval_dropout(node: Node):
    """A random op whose `training` flag is constant false (the dropout family in eval): its input,
    when that is typed as the op's result is (a scripted model's, of no known shape, included) and the
    op's rule takes every rank the input can have (an eval dropout1d of a 4-D input still raises)."""
    op = op_of(node)
    if op is None or op.kind != "random" or "training" not in op.arg_index or \
            not isinstance(node.output.type, TensorType) or node.inputs[0].type != node.output.type or \
            not accepts_every_rank(node):
        return None
    flag = node.inputs[op.arg_index["training"]]
    return node.inputs[0] if is_constant(flag) and constant_value(flag) is False else None


def _global_average_pool(node: Node):
    """adaptive_avg_pool2d(x, 1) -> x.mean((-2, -1), keepdim=True), the same numbers (the op's kernel
    computes that mean): a reduction that fuses into the elementwise group before it (a conv's ReLU
    epilogue then reduces its rows instead of writing them out for the pool to read back). Where x's
    rank is not known (a scripted model's) it is enough that it can only be 3 or 4 (a conv2d's result,
    through a ReLU: shape_infer.possible_ranks)."""
    if node.op != "adaptive_avg_pool2d" or not is_constant(node.inputs[1]):
        return None
    size = constant_value(node.inputs[1])
    x, t = node.inputs[0], node.inputs[0].type
    if size not in (1, [1], [1, 1], (1, 1)) or not isinstance(t, TensorType) or t.dtype is None or \
            not t.dtype.is_floating_point:
        return None
    ranks = possible_ranks(x)
    if not ranks or not ranks <= {3, 4}:
        return None
    constants = [Node("prim::Constant", [], [ListType(Int)], {"value": [-2, -1]}, node.loc),
                 Node("prim::Constant", [], [Bool], {"value": True}, node.loc),
                 Node("prim::Constant", [], [NoneType], {"value": None}, node.loc)]
    for constant in constants:
        constant.insert_before(node)
    mean = Node("mean", [x] + [c.output for c in constants], [node.output.type], {}, node.loc)
    mean.insert_before(node)
    return mean.output


def _matrix_product(node: Node):
    """mm(a, b) of two matrices -> matmul(a, b), the same numbers: the op fusion and the segment
    programs take as a head (a Linear written as `torch.mm(x, w) + b`). Only where both are known
    to be matrices: mm refuses anything else, matmul would not."""
    if node.op != "mm":
        return None
    if not all(isinstance(v.type, TensorType) and v.type.dtype is not None and v.type.shape is not None
               and len(v.type.shape) == 2 for v in node.inputs) or node.inputs[0].type.dtype is not node.inputs[1].type.dtype:
        return None
    product = Node("matmul", list(node.inputs), [node.output.type], {}, node.loc)
    product.insert_before(node)
    return product.output


def _instance_norm(node: Node):
    """instance_norm(x) with its own statistics -> layer_norm over the spatial dims of x with batch and
    channels flattened, then the per-channel affine: the same arithmetic, in the op that fuses into a
    compiled reduction (fast-neural-style's InstanceNorm2d ran in numpy)."""
    if node.op != "instance_norm":
        return None
    x, weight, bias, mean, var, use_input_stats = node.inputs[:6]
    t = x.type
    if not (isinstance(t, TensorType) and t.dtype is not None and t.dtype.is_floating_point and t.shape is not None
            and len(t.shape) >= 3 and all(isinstance(d, int) for d in t.shape[1:])):
        return None
    if not (_is_none(mean) and _is_none(var) and is_constant(use_input_stats) and constant_value(use_input_stats) is True):
        return None
    channels, spatial = t.shape[1], list(t.shape[2:])
    affine = [v for v in (weight, bias) if not _is_none(v)]
    if any(not isinstance(v.type, TensorType) or v.type.dtype is not t.dtype or v.type.shape != (channels,)
           for v in affine):
        return None
    def constant(value, type_):
        made = Node("prim::Constant", [], [type_], {"value": value}, node.loc)
        made.insert_before(node)
        return made.output

    def emit(op, inputs, type_):
        made = Node(op, inputs, [type_], {}, node.loc)
        made.insert_before(node)
        return made.output

    rows = TensorType(t.dtype, (None, *spatial))
    flat = emit("flatten", [x, constant(0, Int), constant(1, Int)], rows)
    none = constant(None, NoneType)
    normalized = emit("layer_norm", [flat, constant(spatial, ListType(Int)), none, none, node.inputs[7]], rows)
    y = emit("reshape", [normalized, emit("size.all", [x], ListType(Int))], node.output.type)
    per_channel = constant([channels] + [1] * len(spatial), ListType(Int))
    column = TensorType(t.dtype, (channels,) + (1,) * len(spatial))
    if not _is_none(weight):
        y = emit("mul", [y, emit("reshape", [weight, per_channel], column)], node.output.type)
    if not _is_none(bias):
        y = emit("add", [y, emit("reshape", [bias, per_channel], column), constant(1, Int)], node.output.type)
    return y


def _two_norm(node: Node):
    """norm(x, 2, dims, keepdim) of a float32/float64 x -> sqrt(sum(x * x, dims, keepdim)): what the
    op's kernel computes, as ops that fuse into a compiled reduction (F.normalize's and forward-
    forward's row norms ran in numpy, between two compiled programs)."""
    if node.op not in ("norm", "linalg_vector_norm") or len(node.inputs) != 5:
        return None
    x, p, dims, keepdim, dtype = node.inputs
    t = x.type
    if not (isinstance(t, TensorType) and t.dtype is not None and t.dtype.name in ("float32", "float64")
            and isinstance(node.output.type, TensorType) and node.output.type.dtype is t.dtype):
        return None
    if not (_const(p, 2) and is_constant(dims) and is_constant(keepdim) and _is_none(dtype)):
        return None
    squares = Node("mul", [x, x], [t], {}, node.loc)
    squares.insert_before(node)
    total = Node("sum", [squares.output, dims, keepdim, dtype], [node.output.type], {}, node.loc)
    total.insert_before(node)
    root = Node("sqrt", [total.output], [node.output.type], {}, node.loc)
    root.insert_before(node)
    return root.output


def _rank_of_rank_keeping(node: Node):
    """dim(op(x, ...)) -> dim(x) where op keeps its input's rank (shape_infer.keeps_rank)."""
    if node.op != "dim" or len(node.inputs) != 1:
        return None
    producer = node.inputs[0].node
    if producer is None or not producer.inputs or not keeps_rank(producer):
        return None
    rank = Node("dim", [producer.inputs[0]], [Int], {}, node.loc)
    rank.insert_before(node)
    return rank.output


def _widening_refine(node: Node):
    """prim::Refine(x) of a tensor to a tensor type x's already is, or a less precise one (the script
    compiler's `Tensor` for a conv2d result it knows is float32): x, which nothing has to re-type."""
    if node.op != "prim::Refine":
        return None
    x, to = node.inputs[0], node.output.type
    if not isinstance(x.type, TensorType) or not isinstance(to, TensorType) or \
            to.dtype is not None and to.dtype is not x.type.dtype or to.shape is not None and to.shape != x.type.shape:
        return None
    return x


def _is_none(v: Value) -> bool:
    return is_constant(v) and constant_value(v) is None


RULES: dict[str, Callable[[Node], Value | None]] = {
    "x * 1": _identity_with("mul", 1, 1),
    "1 * x": _identity_with("mul", 0, 1),
    "x / 1": _identity_with("div", 1, 1),
    "x + 0": _identity_with("add", 1, 0),
    "x - 0": _identity_with("sub", 1, 0),
    "--x": _double("neg"),
    "t(t(x))": _double("t"),
    "transpose(transpose(x))": _double("transpose"),
    "reshape chain": _reshape_chain,
    "no-op reshape/cast": _noop_reshape,
    "dropout in eval": _eval_dropout,
    "global average pool": _global_average_pool,
    "mm of matrices": _matrix_product,
    "instance norm": _instance_norm,
    "2-norm": _two_norm,
    "rank of a rank-keeping op": _rank_of_rank_keeping,
    "widening refine": _widening_refine,
}


def canonicalize(graph: Graph, fired: dict | None = None) -> bool:
    """Apply RULES until none fires; `fired` (if given) counts firings per rule name."""
    changed = False
    progress = True
    while progress:
        progress = False
        for node in list(walk(graph.block)):
            if node.owner is None or len(node.outputs) != 1 or not node.output.uses:
                continue  # (a rewritten node keeps no uses; dce removes it)
            for name, rule in RULES.items():
                replacement = rule(node)
                if replacement is not None and replacement is not node.output:
                    node.output.replace_all_uses_with(replacement)
                    if fired is not None:
                        fired[name] = fired.get(name, 0) + 1
                    progress = changed = True
                    break
    return changed
