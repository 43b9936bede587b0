"""torch.functional's shape and dtype helpers: broadcast_shapes, promote_types, result_type, can_cast."""

from __future__ import annotations

from scriptc import types as T

__all__ = ["broadcast_shapes", "promote_types", "result_type", "can_cast"]


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
