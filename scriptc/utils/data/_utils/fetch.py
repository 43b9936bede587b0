"""Fetchers: one batch (or sample) of a dataset from the sampler's indices, collated."""

from __future__ import annotations

from scriptc.utils.data._utils.collate import default_collate

__all__ = ["create_fetcher", "MapDatasetFetcher", "IterableDatasetFetcher"]


class MapDatasetFetcher:
    """Indexes a map-style dataset: a list of indices with automatic batching, else one key."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        # A dataset that can make default_collate's batch itself (TensorDataset, a Subset of one)
        # gathers whole rows in one pass instead of a tensor per sample.
        self.collated_batch = (getattr(dataset, "_default_collated_batch", None)
                               if auto_collation and collate_fn is default_collate else None)

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        if self.collated_batch is not None:
            batch = self.collated_batch(possibly_batched_index)
            if batch is not None:
                return batch
        if type(possibly_batched_index) is range:  # BatchSampler._index_batches: users see a list
            possibly_batched_index = list(possibly_batched_index)
        if callable(getattr(self.dataset, "__getitems__", None)):
            data = self.dataset.__getitems__(possibly_batched_index)
        else:
            data = [self.dataset[idx] for idx in possibly_batched_index]
        return self.collate_fn(data)


class IterableDatasetFetcher:
    """Draws from an iterable dataset's iterator: batch_size samples with automatic batching
    (fewer at the end, none when drop_last), else one; StopIteration when it is exhausted."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(kind: str, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """The fetcher for a 'map' or 'iterable' dataset."""
    fetcher = MapDatasetFetcher if kind == "map" else IterableDatasetFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)
