"""DataLoader in the main process (num_workers=0): batching, sampling, options and their errors."""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

import scriptc as torch
from scriptc.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
)


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i)]), "y": i * i}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_batches_of_a_map_dataset():
    batches = list(DataLoader(Squares(), batch_size=4))
    assert len(batches) == 3 and len(DataLoader(Squares(), batch_size=4)) == 3
    assert batches[0]["x"].shape == (4, 1) and batches[0]["y"].tolist() == [0, 1, 4, 9]
    assert batches[-1]["y"].tolist() == [64, 81]
    assert len(list(DataLoader(Squares(), batch_size=4, drop_last=True))) == 2


def test_without_automatic_batching_samples_are_converted_one_by_one():
    loader = DataLoader(np.arange(6).reshape(3, 2), batch_size=None)
    items = list(loader)
    assert len(items) == 3 and isinstance(items[0], torch.Tensor) and items[2].tolist() == [4, 5]


def test_shuffle_is_reproducible_from_a_generator():
    def order(seed):
        loader = DataLoader(range(20), batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(seed))
        return [i for batch in loader for i in batch.tolist()]

    assert order(1) == order(1) and order(1) != order(2) and sorted(order(1)) == list(range(20))


def test_samplers_and_collate_functions():
    loader = DataLoader(Squares(), sampler=[9, 0, 4], batch_size=2, collate_fn=lambda batch: [s["y"] for s in batch])
    assert list(loader) == [[81, 0], [16]]
    by_batch = DataLoader(Squares(), batch_sampler=BatchSampler(SequentialSampler(range(3)), 2, False))
    assert [b["y"].tolist() for b in by_batch] == [[0, 1], [4]]


def test_iterable_datasets():
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert [int(v) for v in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]


def test_tensor_dataset_batches_equal_collated_samples():
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((50, 3, 2)).astype(np.float32))
    y = torch.arange(50)
    ds = TensorDataset(x, y)
    indices = [5, 49, 0, -1, 7]
    fast = ds._default_collated_batch(indices)
    slow = default_collate([ds[i] for i in indices])
    assert type(fast) is list and len(fast) == 2
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and a.shape == b.shape and a.is_contiguous()
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(IndexError, match="index 50 is out of bounds for dimension 0 with size 50"):
        ds._default_collated_batch([1, 50])
    sub = Subset(ds, [10, 20, 30])
    np.testing.assert_array_equal(sub._default_collated_batch([2, 0])[1].numpy(), [30, 10])


def test_tensor_dataset_batches_keep_autograd():
    weights = torch.ones(4, 2, requires_grad=True)
    (batch,) = next(iter(DataLoader(TensorDataset(weights), batch_size=2)))
    batch.sum().backward()
    assert weights.grad.tolist() == [[1, 1], [1, 1], [0, 0], [0, 0]]


def test_option_errors_as_torch_words_them():
    cases = [
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), ValueError, "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables auto-batching"),
        (dict(multiprocessing_context="spawn"), ValueError, "multiprocessing_context can only be used with"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, "should specify a valid start method"),
        (dict(num_workers=1, multiprocessing_context=3), TypeError, "should be a valid context object"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            DataLoader(Squares(), **kwargs)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    loader = DataLoader(Squares())
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3


def test_pin_memory_without_a_gpu_warns_and_loads():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        batches = list(DataLoader(Squares(), batch_size=5, pin_memory=True))
    assert len(batches) == 2


def test_imports_that_real_code_uses():
    from scriptc.utils.data.dataloader import DataLoader as from_module
    from scriptc.utils.data.dataset import TensorDataset as dataset_from_module
    assert from_module is DataLoader and dataset_from_module is TensorDataset
    assert torch.utils.data.DataLoader is DataLoader


def test_arguments_checked_when_iterating_as_torch_checks_them():
    loader = DataLoader(Squares(), timeout=5)  # accepted here; only workers can time out
    with pytest.raises(AssertionError, match=r"^_SingleProcessDataLoaderIter requires timeout == 0$"):
        iter(loader)
    loader = DataLoader(Squares(), num_workers=1, prefetch_factor=0)
    with pytest.raises(AssertionError, match="^prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter$"):
        iter(loader)


def test_more_workers_than_cpus_warns_at_construction_and_iteration():
    cpus = len(os.sched_getaffinity(0))
    message = (f"This DataLoader will create {cpus + 1} worker processes in total. Our suggested max number of worker "
               f"in current system is {cpus}, which is smaller than what this DataLoader is going to create.")
    with pytest.warns(UserWarning, match=re.escape(message)):
        loader = DataLoader(Squares(), num_workers=cpus + 1, prefetch_factor=0)
    with pytest.warns(UserWarning, match=re.escape(message)), pytest.raises(AssertionError):
        iter(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(Squares(), num_workers=cpus)


def test_argument_checks_match_torch():
    real = pytest.importorskip("torch")
    # (prefetch_factor=0 is left out: torch's iterator then fails in its own __del__ as well)
    for kwargs in [dict(timeout=5), dict(num_workers=1, prefetch_factor=-1), dict(timeout=-1)]:
        outcomes = []
        for lib, data in ((real, real.arange(10)), (torch, torch.arange(10))):
            try:
                iter(lib.utils.data.DataLoader(lib.utils.data.TensorDataset(data), **kwargs))
                outcomes.append(None)
            except Exception as exc:  # noqa: BLE001 - the kind and words are what is compared
                outcomes.append((type(exc), str(exc)))
        assert outcomes[0] == outcomes[1], kwargs


class RecordsIndices(Dataset):
    """A dataset that records the index lists its __getitems__ is given."""

    def __init__(self, n):
        self.n, self.seen = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(float(i))

    def __getitems__(self, indices):
        self.seen.append(indices)
        return [self[i] for i in indices]


def test_sequential_batches_reach_user_code_as_lists_and_match_torch():
    dataset = RecordsIndices(7)
    batches = [b.tolist() for b in DataLoader(dataset, batch_size=3, drop_last=True)]
    assert dataset.seen == [[0, 1, 2], [3, 4, 5]] and all(type(seen) is list for seen in dataset.seen)
    assert batches == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    x = torch.arange(20.0).reshape(10, 2)
    got = [[t.tolist() for t in b] for b in DataLoader(TensorDataset(x, torch.arange(10)), batch_size=4)]
    real = pytest.importorskip("torch")
    ref = [[t.tolist() for t in b] for b in real.utils.data.DataLoader(
        real.utils.data.TensorDataset(real.arange(20.0).reshape(10, 2), real.arange(10)), batch_size=4)]
    assert got == ref
