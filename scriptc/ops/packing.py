"""Packing of padded sequences for the recurrent layers, as torch's `_pack_padded_sequence` /
`_pad_packed_sequence`: one op each, taking the lengths (or batch sizes) as a tensor.

As ops, a trace records them with the lengths as data, so a traced encoder that packs its batch
runs at lengths it was not traced with (as torch's traced graphs do). A packed batch is time-major:
step 0 of every sequence, then step 1 of those still running, ...; `batch_sizes[t]` counts the
sequences running at step t (the lengths are sorted in decreasing order).
"""

from __future__ import annotations

from scriptc.types import TensorType, int64

from . import register
from .schema import OPAQUE


def _step_indices(xp, batch_sizes):
    """(time index, batch index) of every packed row, in packed order."""
    time_index = xp.repeat(xp.arange(batch_sizes.shape[0], dtype=xp.int64), batch_sizes)
    starts = xp.repeat(xp.cumsum(batch_sizes) - batch_sizes, batch_sizes)
    return time_index, xp.arange(time_index.shape[0], dtype=xp.int64) - starts


def _time_major(x, batch_first):
    return x.swapaxes(0, 1) if batch_first else x


def _check_lengths(xp, padded, lengths):
    steps, batch = padded.shape[0], padded.shape[1]
    if padded.size == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lengths.ndim != 1 or lengths.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.shape[0]} "
                           f"(batch_size={batch})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if xp.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:
        raise RuntimeError(f"lengths[0] = {int(lengths[0])} is longer than the padded sequence length {steps}")


def _pack_kernel(xp, input, lengths, batch_first):
    padded = _time_major(input, batch_first)
    lengths = lengths.astype(xp.int64)
    _check_lengths(xp, padded, lengths)
    batch_sizes = (lengths[None, :] > xp.arange(lengths[0])[:, None]).sum(1).astype(xp.int64)
    time_index, batch_index = _step_indices(xp, batch_sizes)
    return padded[time_index, batch_index], batch_sizes


def _pack_grad(ctx, grads):
    xp, g = ctx.xp, grads[0]
    shape = _time_major(ctx.input, ctx.batch_first).shape
    padded = xp.zeros(shape, dtype=g.dtype)
    padded[_step_indices(xp, ctx.out[1])] = g
    return xp.ascontiguousarray(_time_major(padded, ctx.batch_first)), None, None


def _pack_rule(input, lengths, batch_first):
    rows = None if input.shape is None else (None,) + tuple(input.shape[2:])
    return TensorType(input.dtype, rows, input.device), TensorType(int64, (None,), input.device)


register("_pack_padded_sequence(input: Tensor, lengths: Tensor, batch_first: bool) -> (Tensor, Tensor)", OPAQUE,
         _pack_kernel, shape=_pack_rule, grad=_pack_grad, save=("input",), nondifferentiable_outputs=(1,),
         method=False,
         doc="The rows of a padded batch (T, B, *) ((B, T, *) with batch_first) that lie within each sequence's "
             "length, time-major; and the batch size of each step. The lengths must be in decreasing order.")


def _pad_kernel(xp, data, batch_sizes, batch_first, padding_value, total_length):
    batch_sizes = batch_sizes.astype(xp.int64)
    steps = batch_sizes.shape[0]
    if total_length > 0:  # as torch's op: 0 or less pads to the longest sequence
        if total_length < steps:
            raise RuntimeError("Expected total_length to be at least the length of the longest sequence in input, "
                               f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0]) if batch_sizes.shape[0] else 0
    padded = xp.full((steps, batch) + data.shape[1:], padding_value, dtype=data.dtype)
    padded[_step_indices(xp, batch_sizes)] = data
    lengths = (batch_sizes[None, :] > xp.arange(batch)[:, None]).sum(1).astype(xp.int64)
    return xp.ascontiguousarray(_time_major(padded, batch_first)), lengths


def _pad_grad(ctx, grads):
    xp = ctx.xp
    g = _time_major(grads[0], ctx.batch_first)
    return g[_step_indices(xp, ctx.batch_sizes.astype(xp.int64))], None, None, None, None


def _pad_rule(data, batch_sizes, batch_first, padding_value, total_length):
    trailing = None if data.shape is None else tuple(data.shape[1:])
    padded = None if trailing is None else (None, None) + trailing
    return TensorType(data.dtype, padded, data.device), TensorType(int64, (None,), data.device)


register("_pad_packed_sequence(data: Tensor, batch_sizes: Tensor, batch_first: bool, padding_value: Scalar, "
         "total_length: int) -> (Tensor, Tensor)", OPAQUE, _pad_kernel, shape=_pad_rule, grad=_pad_grad,
         save=("batch_sizes",), nondifferentiable_outputs=(1,), method=False,
         doc="A packed batch's rows back into a padded batch (total_length or, when it is 0 or less, the longest "
             "sequence's length, B, *) (batch first with batch_first) filled with padding_value; and each sequence's "
             "length.")
