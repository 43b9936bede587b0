"""DataLoader: batches from a dataset, in the main process or in worker processes.

With num_workers=0 the main process fetches and collates each batch. With num_workers > 0
(_utils/multiprocessing_iter.py) worker processes do, writing batches into shared memory that
the main process maps without copying.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import warnings
from typing import Any, Callable

from scriptc.utils.data._utils.collate import default_collate, default_convert
from scriptc.utils.data._utils.fetch import create_fetcher
from scriptc.utils.data._utils.shared_batches import SpareBlocks
from scriptc.utils.data.dataset import Dataset, IterableDataset
from scriptc.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


# Attributes that make no sense to change once a DataLoader exists (torch refuses too).
_FIXED_ATTRIBUTES = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader:
    """Iterate over a dataset in batches.

    dataset: map-style (`__getitem__`/`__len__`) or an IterableDataset. batch_size / shuffle /
    sampler / batch_sampler / drop_last choose the indices (shuffle draws from `generator`).
    collate_fn turns a list of samples into a batch (default_collate). num_workers > 0 loads in
    that many processes (multiprocessing_context: 'fork', 'spawn', 'forkserver' or a context),
    each seeded from `generator`, running worker_init_fn(worker_id) first, prefetching
    prefetch_factor batches; persistent_workers keeps them between epochs; timeout bounds the
    wait for a batch; in_order=False yields batches as they arrive. pin_memory needs a GPU and
    is ignored (with torch's warning) without one.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._spare_blocks = SpareBlocks()  # shared memory of finished iterators, for the next one's workers
        self._IterableDataset_len_called = None
        self._initialized = True
        self._check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_initialized", False) and name in _FIXED_ATTRIBUTES:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _check_worker_number_rationality(self) -> None:
        """Warn, as torch does, when more workers are asked for than this process has CPUs."""
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if self.num_workers == 0 or (cpus is not None and self.num_workers <= cpus):
            return
        if cpus is None:
            suggestion = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            cpuset = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            suggestion = (f"Our suggested max number of worker in current system is {cpus}{cpuset}, which is smaller "
                          "than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {suggestion} Please "
                      "be aware that excessive worker creation might get DataLoader running slow or even freeze, lower "
                      "the worker number to avoid potential slowness/freeze if necessary.", stacklevel=3)

    def _get_iterator(self) -> "_BaseDataLoaderIter":
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self._check_worker_number_rationality()
        from scriptc.utils.data._utils.multiprocessing_iter import MultiProcessingDataLoaderIter
        return MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> "_BaseDataLoaderIter":
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:  # none yet, or stopped by a failure
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def _base_seed(generator) -> int:
    """A new seed for the workers of one iteration, drawn from the loader's generator (or the global one)."""
    import scriptc
    return int(scriptc.empty((), dtype=scriptc.int64).random_(generator=generator).item())


def _index_iterator(index_sampler):
    """The indices (or batches of indices) the fetchers receive, in the sampler's order."""
    return index_sampler._index_batches() if isinstance(index_sampler, BatchSampler) else iter(index_sampler)


class _BaseDataLoaderIter:
    """What iterating a DataLoader once gives: the sampler's indices become batches."""

    def __init__(self, loader: DataLoader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = _index_iterator(self._index_sampler)
        self._base_seed = _base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> "_BaseDataLoaderIter":
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = _index_iterator(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == "iterable" and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            message = (f"Length of IterableDataset {self._dataset} was reported to be "
                       f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but {self._num_yielded} "
                       "samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                            "IterableDataset replica at each worker. Please see "
                            "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetches each batch in the main process."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        if self._timeout != 0:  # torch's check, word for word: a timeout bounds the wait for a worker
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = create_fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                       self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()
        return self._fetcher.fetch(index)
