"""nn.utils.rnn against torch: packing, padding and their gradients, sorting, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from ..compare import assert_same_error, compare_call

torch = pytest.importorskip("torch")

rng = np.random.default_rng(1)


def _x(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("lengths, batch_first, enforce_sorted", [
    ([5, 3, 3, 1], False, True), ([2, 5, 1, 4], True, False), ([3, 3, 3, 3], False, False)])
def test_pack_then_pad_roundtrip(lengths, batch_first, enforce_sorted):
    padded = _x(4, 5, 2) if batch_first else _x(5, 4, 2)

    def roundtrip(T, x):
        packed = T.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                     enforce_sorted=enforce_sorted)
        out, out_lengths = T.nn.utils.rnn.pad_packed_sequence(packed, batch_first=batch_first, padding_value=0.5,
                                                              total_length=6)
        return packed.data, packed.batch_sizes.to(T.float32), out, out_lengths.to(T.float32)
    ours, theirs = compare_call(roundtrip, [padded])
    packed = scriptc.nn.utils.rnn.pack_padded_sequence(scriptc.tensor(padded), lengths, batch_first=batch_first,
                                                       enforce_sorted=enforce_sorted)
    assert (packed.sorted_indices is None) == enforce_sorted


def test_pad_sequence_options():
    seqs = [_x(2, 3), _x(4, 3), _x(1, 3)]
    for kwargs in [{}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}]:
        compare_call(lambda T, *s: T.nn.utils.rnn.pad_sequence(list(s), **kwargs), seqs)


def test_pack_sequence_and_unpack_sequence():
    seqs = [_x(2, 3), _x(4, 3), _x(1, 3)]
    compare_call(lambda T, *s: T.nn.utils.rnn.unpack_sequence(T.nn.utils.rnn.pack_sequence(list(s),
                                                                                           enforce_sorted=False)),
                 seqs)
    compare_call(lambda T, x: T.nn.utils.rnn.unpad_sequence(x, T.tensor([3, 1, 2]), batch_first=True), [_x(3, 4, 2)])


def test_packed_sequence_is_a_named_tuple_with_torch_fields():
    packed = scriptc.nn.utils.rnn.pack_sequence([scriptc.ones(3, 2), scriptc.ones(2, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert batch_sizes.tolist() == [2, 2, 1] and sorted_indices is None and unsorted_indices is None
    assert packed.to(scriptc.float64).data.dtype == scriptc.float64
    assert scriptc.nn.utils.rnn.invert_permutation(scriptc.tensor([2, 0, 1])).tolist() == [1, 2, 0]


@pytest.mark.parametrize("call, error, message", [
    (lambda T: T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [2, 4, 3]), RuntimeError,
     "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"),
    (lambda T: T.nn.utils.rnn.pad_packed_sequence(
        T.nn.utils.rnn.pack_padded_sequence(T.zeros(4, 3, 2), [4, 3, 2]), total_length=3), ValueError,
     "Expected total_length to be at least the length of the longest sequence in input, but got total_length=3 "
     "and max sequence length being 4"),
    (lambda T: T.nn.utils.rnn.pad_sequence([T.ones(2, 2)], padding_side="middle"), RuntimeError,
     "Expected padding_side to be one of left or right, but got middle."),
    (lambda T: T.nn.utils.rnn.pad_sequence([]), RuntimeError, "received an empty list of sequences"),
    (lambda T: T.nn.utils.rnn.pad_sequence([T.ones(2, 2), T.ones(3, 3)]), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
])
def test_errors_match_torch(call, error, message):
    assert_same_error(call, error, message)


def test_zero_length_is_rejected():
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        scriptc.nn.utils.rnn.pack_padded_sequence(scriptc.zeros(4, 2, 1), [3, 0])
