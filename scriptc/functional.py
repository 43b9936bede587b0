"""torch.functional's shape and dtype helpers (broadcast_shapes, promote_types, result_type, can_cast),
einsum's sublist form and histogramdd."""

from __future__ import annotations

from scriptc import types as T

__all__ = ["broadcast_shapes", "promote_types", "result_type", "can_cast", "einsum", "histogramdd"]


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (an int counts as a 1-d shape), as a Size."""
    from scriptc.tensors import Size

    result: list[int] = []
    for index, shape in enumerate(shapes):
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        if len(dims) > len(result):
            result = [1] * (len(dims) - len(result)) + result
        for offset in range(1, len(dims) + 1):
            have, want = result[-offset], dims[-offset]
            if want == have or want == 1:
                continue
            if have != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {want} at -{offset}! Mismatching "
                                   f"argument at index {index} had {tuple(dims)}; but expected shape should be "
                                   f"broadcastable to {result}")
            result[-offset] = want
    return Size(result)


def promote_types(type1: T.dtype, type2: T.dtype) -> T.dtype:
    """The smallest dtype both convert to without losing their kind (int32 and float16 give float16)."""
    return T.result_type([(type1, 2), (type2, 2)])


def result_type(tensor1, tensor2) -> T.dtype:
    """The dtype an arithmetic op on these two operands (tensors or Python numbers) computes in."""
    def participant(value):
        dtype = getattr(value, "dtype", None)
        if isinstance(dtype, T.dtype):
            return dtype, 1 if value.dim() == 0 else 2
        return T.scalar_dtype(value), 0

    return T.result_type([participant(tensor1), participant(tensor2)])


def can_cast(from_: T.dtype, to: T.dtype) -> bool:
    """Whether type promotion allows casting from_ to `to`: never to a lower kind (bool < int < float <
    complex), so float to int or int to bool is refused."""
    return from_.category <= to.category


def einsum(*args):
    """torch.einsum: einsum("ij,jk->ik", a, b), or the sublist form einsum(a, [0, 1], b, [1, 2], [0, 2]) with
    subscripts 0-51 (and Ellipsis) per operand and an optional output list last."""
    from scriptc.bindings import FUNCTIONS
    from scriptc.tensors import Tensor

    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if not isinstance(args[0], Tensor):
        return FUNCTIONS["einsum"](*args)
    equation = ",".join("".join(map(_sublist_letter, sublist)) for sublist in args[1::2])
    if len(args) % 2:
        equation += "->" + "".join(map(_sublist_letter, args[-1]))
    return FUNCTIONS["einsum"](equation, *args[:len(args) - len(args) % 2:2])


einsum._scriptc_op = "einsum"  # jit.script calls the op (the equation form)


def _sublist_letter(subscript) -> str:
    if subscript is Ellipsis:
        return "..."
    if isinstance(subscript, int) and 0 <= subscript < 52:
        return chr(ord("A") + subscript) if subscript < 26 else chr(ord("a") + subscript - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def histogramdd(input, bins=10, *, range=None, weight=None, density: bool = False):
    """(hist, bin_edges) of the points in input's last dim: bins is one count for every dimension, a count per
    dimension, or a sequence of bin-edge tensors; range is (min_0, max_0, min_1, max_1, ...) for counts."""
    from scriptc import bindings
    from scriptc.return_types import result_type
    from scriptc.tensors import Tensor

    if isinstance(bins, int) and not isinstance(bins, bool):
        bins = [bins] * input.shape[-1] if input.dim() else [bins]
    if isinstance(bins, (list, tuple)) and bins and all(isinstance(b, Tensor) for b in bins):
        hist = bindings.FUNCTIONS["_histogramdd_from_bin_tensors"](input, list(bins), weight=weight, density=density)
        edges = tuple(bins)
    elif isinstance(bins, (list, tuple)) and all(isinstance(b, int) and not isinstance(b, bool) for b in bins):
        edges = tuple(bindings.FUNCTIONS["_histogramdd_bin_edges"](input, list(bins), range=range, weight=weight,
                                                                   density=density))
        hist = bindings.FUNCTIONS["_histogramdd_from_bin_cts"](input, list(bins), range=range, weight=weight,
                                                             density=density)
    else:
        raise TypeError(f"histogramdd() received an invalid combination of arguments - got (Tensor, "
                        f"bins={type(bins).__name__}), but expected one of:\n"
                        " * (Tensor input, int bins, tuple of floats range = None, Tensor weight = None, "
                        "bool density = False)\n"
                        " * (Tensor input, tuple of ints bins, tuple of floats range = None, Tensor weight = None, "
                        "bool density = False)\n"
                        " * (Tensor input, tuple of Tensors bins, tuple of floats range = None, Tensor weight = None, "
                        "bool density = False)")
    return result_type("histogramdd", ["hist", "bin_edges"])(hist, edges)
