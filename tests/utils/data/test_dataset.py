"""Datasets and random_split, as torch.utils.data defines them."""

from __future__ import annotations

import pytest

import scriptc as torch
from scriptc.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_tensor_dataset_rows():
    x, y = torch.arange(12).reshape(4, 3), torch.arange(4)
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    sample = ds[2]
    assert type(sample) is tuple and sample[0].tolist() == [6, 7, 8] and sample[1].item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, torch.arange(3))


def test_concat_dataset_and_the_plus_operator():
    ds = Squares(3) + Squares(2)
    assert isinstance(ds, ConcatDataset) and len(ds) == 5 and ds.cumulative_sizes == [3, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 4, 0, 1] and ds[-1] == 1
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Count(0, 2)])


def test_chain_dataset():
    chained = Count(0, 2) + Count(5, 7)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 5, 6] and len(chained) == 4
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset_and_its_batched_fetch():
    sub = Subset(Squares(10), [9, 3, 4])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 9, 16]
    assert sub.__getitems__([0, 2]) == [81, 16]

    class Doubled(Subset):
        def __getitem__(self, idx):
            return 2 * super().__getitem__(idx)

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Doubled(Squares(3), [0])


def test_stack_dataset_tuples_and_dicts():
    by_position = StackDataset(Squares(3), Subset(Squares(5), [4, 3, 2]))
    assert by_position[1] == (1, 9) and by_position.__getitems__([0, 2]) == [(0, 16), (4, 4)]
    by_name = StackDataset(a=Squares(2), b=Squares(2))
    assert by_name[1] == {"a": 1, "b": 1} and len(by_name) == 2
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_random_split_by_lengths_and_fractions():
    parts = random_split(Squares(10), [3, 7], generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(Squares(10), [3, 7], generator=torch.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices, "the generator makes the split reproducible"
    assert [len(p) for p in random_split(Squares(10), [0.5, 0.3, 0.2])] == [5, 3, 2]
    assert [len(p) for p in random_split(Squares(11), [0.5, 0.5])] == [6, 5]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(2), [1.0, 0.0])
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        random_split(Squares(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(Squares(10), [1.5, -0.5])


def test_base_classes_say_what_is_missing():
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="should implement __iter__"):
        iter(IterableDataset())
