"""Datasets: map-style (Dataset, TensorDataset, Subset, ConcatDataset, StackDataset), iterable-style
(IterableDataset, ChainDataset), and random_split."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Iterable, Sequence

import numpy as np

from scriptc.utils.data._utils.collate import gather_rows

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]


class Dataset:
    """A map from keys (usually 0..len-1) to samples: subclasses define `__getitem__` (and usually
    `__len__`), optionally `__getitems__(indices)` to fetch a whole batch at once."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__`. With DataLoader workers, each worker
    iterates its own copy; use `get_worker_info()` in `__iter__` to give each worker a shard."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: sample i is
    `tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)

    def _default_collated_batch(self, indices):
        """default_collate([self[i] for i in indices]), gathered in one pass per tensor (a
        DataLoader fast path); None when a subclass changed how samples are made."""
        if type(self).__getitem__ is not TensorDataset.__getitem__:
            return None
        positions = _as_positions(indices, len(self))
        if positions is None:
            return None
        return [gather_rows(tensor, positions) for tensor in self.tensors]

    def _row_arrays(self) -> list | None:
        """The arrays whose rows _default_collated_batch gathers, when gathering rows is all it
        does (a DataLoader worker's fast path, shared_batches.RowGatherer); None when a subclass
        changed how samples are made or a tensor records gradients."""
        if type(self).__getitem__ is not TensorDataset.__getitem__ or any(t.requires_grad for t in self.tensors):
            return None
        return [tensor._data for tensor in self.tensors]

    def _row_positions(self, indices):
        """indices as int64 positions (see _as_positions), None when they are not plain integers."""
        return _as_positions(indices, len(self))


def _as_positions(indices, length: int):
    """indices as an int64 array in [-length, length), or None when they are not plain integers;
    an integer out of range raises IndexError as indexing the tensor would."""
    if type(indices) is range and indices.step == 1 and len(indices):  # a batch of a SequentialSampler
        if indices.stop > length or indices.start < -length:
            bad = indices.stop - 1 if indices.stop > length else indices.start
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {length}")
        return np.arange(indices.start, indices.stop, dtype=np.int64)
    positions = np.asarray(indices)
    if positions.ndim != 1 or positions.dtype.kind not in "iu":
        return None
    if len(indices):
        low, high = min(indices), max(indices)  # builtins: faster than numpy's on a short list
        if low < -length or high >= length:
            bad = high if high >= length else low
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {length}")
    return positions.astype(np.int64, copy=False)


class StackDataset(Dataset):
    """Datasets of equal length zipped: sample i is a tuple (positional) or dict (keyword) of
    each dataset's sample i."""

    def __init__(self, *args: Dataset, **kwargs: Dataset):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                             "but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list) -> list:
        named = isinstance(self.datasets, dict)
        columns = {k: self._column(d, indices) for k, d in (self.datasets.items() if named else
                                                           enumerate(self.datasets))}
        if named:
            return [{k: column[i] for k, column in columns.items()} for i in range(len(indices))]
        return [tuple(column[i] for column in columns.values()) for i in range(len(indices))]

    @staticmethod
    def _column(dataset, indices: list) -> list:
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
            return items
        return [dataset[i] for i in indices]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Datasets one after another: indices past the first dataset's length go to the next."""

    @staticmethod
    def cumsum(sequence) -> list[int]:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained on the fly."""

    def __init__(self, datasets: Iterable[Dataset]):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\ndef __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)

    def _default_collated_batch(self, indices):
        """The wrapped dataset's fast batch at the mapped indices (see TensorDataset)."""
        inner = getattr(self.dataset, "_default_collated_batch", None)
        if inner is None or type(self).__getitems__ is not Subset.__getitems__:
            return None
        return inner([self.indices[idx] for idx in indices])


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split a dataset into non-overlapping Subsets of the given lengths, or of the given fractions
    of its length (floor(frac * len), the remainder handed out one by one); `generator` makes
    the split reproducible."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    from scriptc import randperm
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
