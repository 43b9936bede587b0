"""Memory layout of kernel results: torch gives an op's output the channels-last layout of its input
(and a convolution's of its weight), so `model.to(memory_format=torch.channels_last)` keeps its
activations channels-last. Kernels compute row-major and hand their result to `in_layout`."""

from __future__ import annotations


def channels_last(a) -> bool:
    """Whether an array's strides order it channels-last (NHWC / NDHWC), by torch's test, which reads the
    strides themselves (a 1x1 kernel's weight moved to channels_last counts, though it is row-major too)."""
    if a.ndim not in (4, 5):
        return False
    strides = a.strides
    if strides[-1] < strides[1] * a.shape[1]:
        # the loop's second step, in bytes: the last dim laid out inside the channels is never channels-last
        # (row-major NCHW arrays, the common case, decided without the loop; no channels go to the loop)
        return False
    strides = [s // a.itemsize for s in strides]
    if strides[1] == 0:
        return False
    smallest = 0
    for d in (1,) + tuple(range(a.ndim - 1, 1, -1)) + (0,):  # C, then the spatial dims from the last, then N
        if a.shape[d] == 0 or strides[d] < smallest or (d == 0 and smallest == strides[1]):
            return False
        smallest = strides[d] * max(a.shape[d], 1)
    return True


def in_layout(xp, out, *sources):
    """out, laid out channels-last (same shape and values) when one of the source arrays is."""
    if getattr(out, "ndim", 0) not in (4, 5) or not any(channels_last(s) for s in sources if s is not None):
        return out
    order = (0,) + tuple(range(2, out.ndim)) + (1,)
    inverse = (0, out.ndim - 1) + tuple(range(1, out.ndim - 1))
    return xp.ascontiguousarray(out.transpose(order)).transpose(inverse)
