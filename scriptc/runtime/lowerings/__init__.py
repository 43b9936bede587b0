"""The native lowering of each op a segment program runs (LOWERINGS): views, sizes and integer
arithmetic, zeros, random fills, split and cat, pixel_shuffle, pad, pooling, products, convolutions,
and FusionGroups - each writes its records through the builder (program_values.py) and returns its
outputs' symbolic values."""

from __future__ import annotations

from scriptc import ops

from .fusion import lower_group  # noqa: F401  (program_builder's, with LOWERINGS)
from .kernels import _conv2d, _conv_transpose2d, _matmul, _pool
from .lists import _append, _extend, _getitem, _is_none, _length, _not, _or, _refine, _uninitialized
from .scalars import (_comparison, _copy_list, _dim, _dtype, _integer, _list, _numel, _raise, _range_length, _size,
                      _sizes, _tuple, _unpack)
from .pads import _pad
from .samplers import SAMPLER_LOWERINGS
from .shuffles import _pixel_shuffle
from .views import (_chunk, _contiguous_op, _dropout, _embedding, _flatten, _join, _narrow, _same_tensor, _select,
                    _split, _squeeze, _transpose, _unsqueeze, _view, _zeros)

# The fusion heads a segment program runs (its lowering of each: _product, convolution, conv_transpose).
HEADS = ("matmul", "conv2d", "conv_transpose2d")

LOWERINGS = {
    "view": _view, "reshape": _view, "flatten": _flatten, "unsqueeze": _unsqueeze, "contiguous": _contiguous_op,
    "detach": _same_tensor,
    "size": _size, "dim": _dim, "numel": _numel, "chunk": _chunk, "matmul": _matmul,
    "zeros": _zeros(0), "new_zeros": _zeros(1), "zeros_like": _zeros(None), "split": _split,
    "cat": _join(stack=False), "stack": _join(stack=True), "max_pool2d": _pool(0), "avg_pool2d": _pool(1),
    "adaptive_avg_pool2d": _pool(None), "conv2d": _conv2d, "conv_transpose2d": _conv_transpose2d,
    "squeeze": _squeeze, "select": _select,
    "transpose": _transpose, "permute": _transpose, "t": _transpose,
    "embedding": _embedding, "pixel_shuffle": _pixel_shuffle, "pad": _pad,
    "prim::ListConstruct": _list, "prim::TupleConstruct": _tuple, "prim::ListUnpack": _unpack,
    "prim::TupleUnpack": _unpack,
    "add.scalar": _integer("ADD", lambda a, b: a + b), "sub.scalar": _integer("SUB", lambda a, b: a - b),
    "mul.scalar": _integer("MUL", lambda a, b: a * b), "floordiv.scalar": _integer("DIV", lambda a, b: a // b),
    "max.scalar": _integer("MAX", max), "range_length.int": _range_length,
    "eq.scalar": _comparison("eq", lambda a, b: a == b), "ne.scalar": _comparison("ne", lambda a, b: a != b),
    "lt.scalar": _comparison("lt", lambda a, b: a < b), "le.scalar": _comparison("le", lambda a, b: a <= b),
    "gt.scalar": _comparison("gt", lambda a, b: a > b), "ge.scalar": _comparison("ge", lambda a, b: a >= b),
    "prim::RaiseException": _raise,
    "getitem.list": _getitem, "len.list": _length, "append.list": _append, "extend.list": _extend,
    "prim::Refine": _refine, "prim::IsNone": _is_none, "prim::Uninitialized": _uninitialized,
    "not.scalar": _not, "or.scalar": _or, "narrow": _narrow, "dropout": _dropout, "size.all": _sizes,
    "dtype": _dtype, "copy.list": _copy_list, **SAMPLER_LOWERINGS,
}


# Lowerings that only rename memory or do integer arithmetic: a run of nothing but these is no segment
# (a program call costs more than their steps).
CHEAP = {"view", "reshape", "flatten", "unsqueeze", "squeeze", "contiguous", "detach", "size", "dim", "numel", "chunk", "split",
         "select", "transpose", "permute", "t",
         "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack", "prim::TupleUnpack", "add.scalar",
         "sub.scalar", "mul.scalar", "floordiv.scalar", "max.scalar", "range_length.int", "eq.scalar", "ne.scalar", "lt.scalar",
         "le.scalar", "gt.scalar", "ge.scalar", "prim::RaiseException", "prim::If", "prim::Loop", "getitem.list",
         "len.list", "prim::Refine", "prim::IsNone", "prim::Uninitialized", "not.scalar", "or.scalar", "narrow",
         "dropout", "size.all", "dtype", "copy.list"}


def raises(block) -> bool:
    """Whether the block ends in a raise: a program only checks that it is not taken (what comes
    before the raise, such as its message, is the interpreter's to compute)."""
    return block.last is not None and block.last.op == "prim::RaiseException"


def runs_natively(node) -> bool:
    """Whether a node may be part of a segment: an op the interpreter runs, a FusionGroup whose head
    (if any) it runs, or an If (the signature must decide its condition) or a Loop of such nodes."""
    if node.op in ("prim::If", "prim::Loop"):
        return all(raises(block) or all(inner.op == "prim::Constant" or runs_natively(inner) for inner in block)
                   for block in node.blocks)
    if node.op == "prim::FusionGroup":
        first = next((n for n in node.blocks[0] if n.op != "prim::Constant"), None)
        head = ops.OPS.get(first.op) if first is not None else None
        return head is None or not head.fusion_head or head.name in HEADS
    return node.op in LOWERINGS
