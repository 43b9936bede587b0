"""DistributedSampler: each of num_replicas processes loads its own share of a dataset, as torch's."""

from __future__ import annotations

import math

from scriptc.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of one replica (`rank` of `num_replicas`): every num_replicas-th index of the
    dataset's order, starting at rank. The order is shuffled from `seed + epoch` (call set_epoch
    before each epoch for a new order); without drop_last the order is padded by repeating its
    start so every replica gets ceil(len / num_replicas) indices, with it the tail is cut.

    scriptc has no process groups: num_replicas and rank must be given.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            raise RuntimeError("Requires distributed package to be available")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            import scriptc
            generator = scriptc.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = scriptc.randperm(len(self.dataset), generator=generator).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration gives (with shuffle, each epoch's differs)."""
        self.epoch = epoch
