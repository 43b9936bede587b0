"""Cases for packing padded sequences (packing.py): a loop over each sequence's steps as the reference."""

from __future__ import annotations

import numpy as np

from .cases import Case, Int, rand


def _pack_ref(x, lengths, batch_first):
    padded = x.swapaxes(0, 1) if batch_first else x
    rows = [padded[t, b] for t in range(lengths[0]) for b in range(len(lengths)) if lengths[b] > t]
    batch_sizes = np.array([sum(1 for n in lengths if n > t) for t in range(lengths[0])])
    return np.stack(rows), batch_sizes


def _pad_ref(data, batch_sizes, batch_first, padding_value, total_length):
    steps, batch = total_length if total_length > 0 else len(batch_sizes), batch_sizes[0]
    padded = np.full((steps, batch) + data.shape[1:], float(padding_value))
    row = 0
    for t, size in enumerate(batch_sizes):
        padded[t, :size] = data[row:row + size]
        row += size
    lengths = np.array([sum(1 for size in batch_sizes if size > b) for b in range(batch)])
    return (padded.swapaxes(0, 1) if batch_first else padded), lengths


CASES = {
    "_pack_padded_sequence": [
        Case((rand(5, 3, 2), Int(np.array([5, 3, 2])), False), _pack_ref),
        Case((rand(3, 4, 2, 2), Int(np.array([4, 4, 1])), True), _pack_ref, label="batch_first"),
        Case((rand(2, 1), Int(np.array([2])), False), _pack_ref, label="one sequence, no features")],
    "_pad_packed_sequence": [
        Case((rand(6, 2), Int(np.array([3, 2, 1])), False, 0.5, 3), _pad_ref),
        Case((rand(6, 2, 2), Int(np.array([3, 2, 1])), True, -1.0, 5), _pad_ref, label="batch_first, total_length"),
        Case((rand(4, 3), Int(np.array([2, 2])), False, 0.0, 0), _pad_ref, label="total_length 0: the longest")],
}
