"""DistributedSampler: each replica's share of the indices, as torch's gives them."""

from __future__ import annotations

import pytest

import scriptc as torch
from scriptc.utils.data import DataLoader, DistributedSampler


@pytest.mark.parametrize("length, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (3, 8, False),
                                                          (3, 8, True), (0, 2, False)])
def test_unshuffled_shares_match_torch(length, replicas, drop_last):
    real = pytest.importorskip("torch")
    for rank in range(replicas):
        ours = DistributedSampler(range(length), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = real.utils.data.DistributedSampler(range(length), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_shuffled_shares_cover_the_dataset_and_change_with_the_epoch():
    samplers = [DistributedSampler(range(11), 3, rank, seed=5) for rank in range(3)]
    first = [list(s) for s in samplers]
    assert all(len(share) == 4 for share in first)
    merged = sorted(sum(first, []))
    assert set(merged) == set(range(11)) and len(merged) == 12  # one index repeated as padding
    assert [list(s) for s in samplers] == first, "an epoch's order is the same every time it is drawn"
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert second != first and set(sum(second, [])) == set(range(11))


def test_as_a_dataloader_sampler():
    batches = [b.tolist() for b in DataLoader(torch.arange(10) * 10, batch_size=2,
                                              sampler=DistributedSampler(range(10), 2, 1, shuffle=False))]
    assert batches == [[10, 30], [50, 70], [90]]


def test_errors_as_torch_words_them():
    with pytest.raises(ValueError, match=r"^Invalid rank 2, rank should be in the interval \[0, 1\]$"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), 2, -1)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(4))
