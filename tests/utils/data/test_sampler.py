"""Samplers, as torch.utils.data.sampler defines them (importable as that module too)."""

from __future__ import annotations

import collections

import pytest

import scriptc as torch
from scriptc.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sequential_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4


def test_random_sampler_permutes_and_is_reproducible_from_a_generator():
    order = list(RandomSampler(range(20), generator=torch.Generator().manual_seed(3)))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert list(RandomSampler(range(20), generator=torch.Generator().manual_seed(3))) == order
    generator = torch.Generator().manual_seed(3)
    sampler = RandomSampler(range(20), generator=generator)
    assert list(sampler) == order and list(sampler) != order, "each epoch draws anew from the generator"


def test_random_sampler_num_samples_and_replacement():
    longer = list(RandomSampler(range(5), num_samples=12, generator=torch.Generator().manual_seed(0)))
    assert len(longer) == 12 and collections.Counter(longer[:10]) == collections.Counter(list(range(5)) * 2)
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=100))
    assert len(drawn) == 100 and set(drawn) <= {0, 1, 2} and len(set(drawn)) == 3
    torch.manual_seed(7)
    first = list(RandomSampler(range(10)))
    torch.manual_seed(7)
    assert list(RandomSampler(range(10))) == first, "without a generator it draws from the global one"
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    drawn = list(SubsetRandomSampler(indices, generator=torch.Generator().manual_seed(1)))
    assert sorted(drawn) == indices and len(SubsetRandomSampler(indices)) == 4
    assert list(SubsetRandomSampler(indices, generator=torch.Generator().manual_seed(1))) == drawn


def test_weighted_random_sampler():
    counts = collections.Counter(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=torch.Generator().manual_seed(0)))
    assert counts[0] == 0 and 2.5 < counts[2] / counts[1] < 3.5
    assert sorted(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=-1"):
        WeightedRandomSampler([1.0], -1)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=0"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=None"):
        BatchSampler(range(3), 1, None)


def test_sampler_base_and_module_path():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    import scriptc.utils.data.sampler as sampler_module
    from scriptc.utils.data import RandomSampler as exported
    assert sampler_module.RandomSampler is exported


@pytest.mark.parametrize("length, batch_size, drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (0, 2, False),
                                                           (2, 5, True), (2, 5, False)])
def test_index_batches_are_the_batches_of_iter(length, batch_size, drop_last):
    batches = BatchSampler(SequentialSampler(range(length)), batch_size, drop_last)
    assert [list(batch) for batch in batches._index_batches()] == list(batches)
    assert all(type(batch) is list for batch in batches)  # iterating the sampler itself still gives lists
