"""DataLoader worker processes: what runs in a worker, and what a worker's code can ask about it.

A worker seeds its random generators (base_seed + id, as torch does), runs worker_init_fn, then
takes the main process's messages from its task ring (rings.py): a task (fetch and collate one
batch), a reset (start a new epoch with persistent workers) or finish (no more tasks: exit), until
the main process asks it to stop. Batches are collated into the worker's shared-memory blocks
(shared_batches.py) and announced on its result ring; an exception becomes an ExceptionWrapper
the main process re-raises with this worker's traceback.
"""

from __future__ import annotations

import pickle
import random
import struct
import sys
import traceback
from dataclasses import dataclass

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper", "worker_loop", "batch_memory", "task_payload"]

# A task whose batch is a range of consecutive indices from 0 up (a SequentialSampler's batches)
# travels as this header and its freed blocks, with no pickling on either side; any other task
# is a pickle (whose first byte is never _RANGE_TASK's).
_RANGE_TASK = struct.Struct("<cqqqq")  # b"R", task, start, stop, number of freed blocks


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() returns inside a worker: its id (0..num_workers-1), the number of
    workers, its seed, and its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None
_blocks = None  # this worker's WorkerBlocks


def get_worker_info() -> WorkerInfo | None:
    """Information about the DataLoader worker this code runs in; None in the main process.

    An IterableDataset's `__iter__` uses it to give each worker its own share of the data."""
    return _worker_info


def batch_memory():
    """The worker's shared-memory blocks that collate writes batches into (None outside workers)."""
    return _blocks


class KeyErrorMessage(str):
    """A KeyError message that prints as written (KeyError shows the repr of its argument)."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception with its formatted traceback, to re-raise in another process."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception type with 'Caught <Type> <where>.' and the original traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _seed(base_seed: int, worker_id: int) -> int:
    """Seed random, numpy's global generator and scriptc's from base_seed and the worker id."""
    import scriptc

    seed = base_seed + worker_id
    random.seed(seed)
    scriptc.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def task_payload(task: int, index, freed: list[int]) -> bytes:
    """The payload of a task message: make batch `task` from `index`, after taking back the blocks
    `freed` (shared_batches.ReceivedBlocks.take_freed)."""
    if type(index) is range and index.step == 1 and 0 <= index.start <= index.stop < 1 << 63:
        return _RANGE_TASK.pack(b"R", task, index.start, index.stop, len(freed)) + struct.pack(f"<{len(freed)}q", *freed)
    return pickle.dumps(("task", task, index, freed), pickle.HIGHEST_PROTOCOL)


def _read_task(payload: bytes) -> tuple:
    """The message a task_payload (or a pickled control message) carries."""
    if payload[:1] != b"R":
        return pickle.loads(payload)
    _, task, start, stop, count = _RANGE_TASK.unpack_from(payload)
    return "task", task, range(start, stop), struct.unpack_from(f"<{count}q", payload, _RANGE_TASK.size)


def worker_loop(rings, worker_id: int, channel, dataset_kind: str, dataset, auto_collation: bool, collate_fn,
                drop_last: bool, base_seed: int, init_fn, num_workers: int, prefetch_factor: int,
                inherited_blocks: list) -> None:
    """The body of a worker process (the target its Process runs)."""
    global _worker_info, _blocks
    from scriptc.utils.data._utils.fetch import create_fetcher
    from scriptc.utils.data._utils.rings import WorkerEnd
    from scriptc.utils.data._utils.shared_batches import RowGatherer, WorkerBlocks

    try:
        link = WorkerEnd(rings, worker_id, channel)
        seed = _seed(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        _blocks = WorkerBlocks(prefetch_factor, inherited_blocks)
        where = f"in DataLoader worker process {worker_id}"
        init_exception = gatherer = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
            gatherer = RowGatherer.for_fetcher(fetcher, _blocks)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        iteration_end = False
        while True:
            task_message = link.take_task()  # EOFError when the main process is gone
            if task_message is None:
                return
            message = _read_task(task_message[0])
            if message[0] == "finish":
                link.mark_finished()
                return
            if message[0] == "reset":
                iteration_end = False
                fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                gatherer = RowGatherer.for_fetcher(fetcher, _blocks)
                _send(link, ("reset",), where)
                continue
            _, task, index, freed = message
            _blocks.release(freed)
            if iteration_end:
                continue  # the main process stops asking once it hears of the end
            if init_exception is not None:
                reply, init_exception = ("data", task, init_exception), None
            else:
                try:
                    packed = gatherer.message(task, index) if gatherer is not None else None
                    reply = None if packed is not None else ("data", task, fetcher.fetch(index))
                except StopIteration:
                    if dataset_kind != "iterable":
                        reply = ("data", task, ExceptionWrapper(where=where))
                    else:
                        reply, iteration_end = ("end", task, worker_id), True
                except Exception:
                    reply = ("data", task, ExceptionWrapper(where=where))
            if reply is None:  # the gatherer made the batch's message itself
                link.put_result(*packed)
            else:
                _send(link, reply, where)
            del reply
    except (KeyboardInterrupt, EOFError, BrokenPipeError, ConnectionResetError):
        pass  # interrupted with the main process, or the main process closed the channel


def _send(link, reply: tuple, where: str) -> None:
    try:
        payload, fds = _blocks.pack(reply)
    except Exception:  # the batch cannot be pickled (or a tensor in it cannot be shared): report that
        payload, fds = _blocks.pack(reply[:2] + (ExceptionWrapper(where=where),))
    link.put_result(payload, fds)
