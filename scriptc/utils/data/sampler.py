"""Samplers: the order (and batches) of dataset indices a DataLoader fetches.

Random samplers draw through scriptc's random ops with an optional `generator`, exactly as
torch's do, so a seeded generator gives the same order every time.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    """Base class of samplers: subclasses define `__iter__` over indices (and usually `__len__`)."""

    def __init__(self, data_source=None):
        if data_source is not None:
            import warnings
            warnings.warn("`data_source` argument is not used and will be removed in 2.2.0.You may still have "
                          "custom implementation that utilizes it.", stacklevel=2)

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded from the global one, as torch's samplers make when given none."""
    import scriptc
    seed = int(scriptc.empty((), dtype=scriptc.int64).random_().item())
    generator = scriptc.Generator()
    generator.manual_seed(seed)
    return generator


class RandomSampler(Sampler):
    """A random permutation of the indices (each exactly once per permutation), or with
    replacement=True independent draws; num_samples defaults to len(data_source)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        import scriptc

        n = len(self.data_source)
        generator = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from scriptc.randint(high=n, size=(32,), dtype=scriptc.int64, generator=generator).tolist()
            yield from scriptc.randint(high=n, size=(self.num_samples % 32,), dtype=scriptc.int64,
                                       generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from scriptc.randperm(n, generator=generator).tolist()
            yield from scriptc.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        import scriptc
        for i in scriptc.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to `weights` (with replacement
    unless replacement=False)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator=None):
        import scriptc

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = scriptc.as_tensor(weights, dtype=scriptc.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        import scriptc
        drawn = scriptc.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`; the last, shorter one is dropped when drop_last."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[sampler_iter] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def _index_batches(self):
        """The batches as a DataLoader fetches them: what __iter__ yields, except that batches of
        a plain SequentialSampler come as ranges (no list of ints to build, send to a worker and
        turn into an array again; fetchers give user code lists)."""
        if type(self).__iter__ is not BatchSampler.__iter__ or type(self.sampler) is not SequentialSampler:
            return iter(self)
        length = len(self.sampler)
        stop = length - length % self.batch_size if self.drop_last else length
        return (range(start, min(start + self.batch_size, stop)) for start in range(0, stop, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
