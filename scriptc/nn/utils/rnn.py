"""Packed variable-length sequences for the recurrent layers, as torch.nn.utils.rnn.

A PackedSequence stores the steps of a batch of sequences sorted by length,
time-major: `data` holds step 0 of every sequence, then step 1 of those still
running, and so on; `batch_sizes[t]` says how many run at step t. Packing and
padding are one op each (ops/packing.py), differentiable, and a trace records them
with the lengths as data.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

import scriptc
from scriptc.ops import OPS
from scriptc.tensors import Tensor, call

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


class PackedSequence(_PackedSequenceFields):
    """The packed steps of a batch of sequences; build it with pack_padded_sequence or pack_sequence."""

    def __new__(cls, data: Tensor, batch_sizes: Optional[Tensor] = None, sorted_indices: Optional[Tensor] = None,
                unsorted_indices: Optional[Tensor] = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> "PackedSequence":
        return self

    def cuda(self, *args, **kwargs) -> "PackedSequence":
        return self.to("cuda")

    def pin_memory(self) -> "PackedSequence":
        return self

    def double(self) -> "PackedSequence":
        return self.to(scriptc.float64)

    def float(self) -> "PackedSequence":
        return self.to(scriptc.float32)

    def half(self) -> "PackedSequence":
        return self.to(scriptc.float16)

    def long(self) -> "PackedSequence":
        return self.to(scriptc.int64)

    def int(self) -> "PackedSequence":
        return self.to(scriptc.int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    return scriptc.argsort(permutation)


def _lengths_tensor(lengths) -> Tensor:
    if isinstance(lengths, Tensor):
        return lengths.to(scriptc.int64)
    return scriptc.as_tensor(list(lengths), dtype=scriptc.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given lengths.

    With enforce_sorted=True the lengths must be in decreasing order; otherwise the batch is sorted
    here and the permutation kept in the result. A traced model takes the lengths as data: the trace
    runs at other lengths.
    """
    lengths = _lengths_tensor(lengths)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = scriptc.sort(lengths, descending=True, stable=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = call(OPS["_pack_padded_sequence"], (input, lengths, batch_first))
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: (padded batch, lengths), in the original batch order."""
    if total_length is not None and total_length < sequence.batch_sizes.size(0):
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but got "
                         f"total_length={total_length} and max sequence length being {sequence.batch_sizes.size(0)}")
    # without total_length the op pads to the longest sequence it is given (0 asks for no more), which a
    # trace keeps as data rather than freezing the traced length
    padded, lengths = call(OPS["_pad_packed_sequence"], (sequence.data, sequence.batch_sizes, batch_first,
                                                        padding_value, total_length or 0))
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with padding_value."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.size(0) for s in sequences)
    trailing = list(sequences[0].shape[1:])
    padded: List[Tensor] = []
    for s in sequences:
        if list(s.shape[1:]) != trailing:
            raise RuntimeError(_trailing_mismatch(trailing, list(s.shape[1:])))
        missing = longest - s.size(0)
        if missing:
            fill = scriptc.full([missing] + trailing, padding_value, dtype=s.dtype)
            s = scriptc.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return scriptc.stack(padded, 0 if batch_first else 1)


def _trailing_mismatch(expected: List[int], got: List[int]) -> str:
    if len(expected) != len(got):
        return (f"pad_sequence: every sequence needs {len(expected) + 1} dimensions, like the first, but one has "
                f"{len(got) + 1}")
    dim = next(i for i, (a, b) in enumerate(zip(expected, got)) if a != b)
    return (f"The size of tensor a ({expected[dim]}) must match the size of tensor b ({got[dim]}) at non-singleton "
            f"dimension {dim + 1}")


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> List[Tensor]:
    """Split a padded batch back into a list of sequences of the given lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(length)] for seq, length in zip(padded_sequences.unbind(0), _lengths_tensor(lengths).tolist())]


def pack_sequence(sequences: List[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shape (L_i, *) (longest first unless enforce_sorted=False)."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    """Undo pack_sequence: the list of sequences."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
