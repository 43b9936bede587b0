"""Dynamic batching: each model has a bounded queue and one task that forms batches from it.

Requests whose inputs agree except in dim 0 are stacked (up to max_batch rows, waiting at most
batch_delay_ms), run once on a worker thread, and split back. A full queue is a 503 at once; a
request not answered within timeout_s a 504.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from scriptc.errors import CallError, ServeError, SignatureError

from .metrics import Metrics
from .protocol import ModelEntry

# A batch being formed stops waiting for company after this long without a new request.
ARRIVAL_GAP_S = 0.0003


def stack_key(inputs: list) -> tuple:
    """What requests must share to be stacked: each input's dtype and shape past dim 0 (None for an
    Optional input left out)."""
    return tuple([(a.dtype, a.shape[1:]) if type(a) is np.ndarray else None for a in inputs])


def run_batch(entry: ModelEntry, requests: list[list]) -> list:
    """Each request's outputs, or the 400 ServeError for a request whose inputs the model's signature
    refuses (a client's mistake: two inputs' batch dims that differ). Requests whose inputs agree
    except in dim 0 are stacked into one call and split back (each run alone if the stacked call is
    refused, so that only the misfit gets the error); a model that cannot batch runs them one by one.
    Raises what else the model raises."""
    results: list = [None] * len(requests)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, inputs in enumerate(requests):
        key = stack_key(inputs) if entry.batchable else i
        groups[key].append(i)
    for members in groups.values():
        if len(members) == 1:
            results[members[0]] = _run_alone(entry, requests[members[0]])
            continue
        stacked = [None if parts[0] is None else np.concatenate(parts)
                   for parts in zip(*[requests[i] for i in members])]
        try:
            outputs, start = _run(entry, stacked), 0
        except _REFUSALS:
            for i in members:
                results[i] = _run_alone(entry, requests[i])
            continue
        rows_of = next(j for j, a in enumerate(stacked) if a is not None)
        for i in members:
            rows = requests[i][rows_of].shape[0]
            results[i] = [o[start:start + rows] for o in outputs]
            start += rows
    return results


# What a model's signature raises for inputs that do not fit it: the request's fault, not the model's.
_REFUSALS = (SignatureError, CallError)


def _run_alone(entry: ModelEntry, inputs: list):
    try:
        return _run(entry, inputs)
    except _REFUSALS as refusal:
        return ServeError(f"model '{entry.name}' refused the inputs: {refusal}", 400)


def _run(entry: ModelEntry, inputs: list) -> list:
    out = entry.model(*inputs)
    return list(out) if isinstance(out, tuple) else [out]


@dataclass
class _Pending:
    inputs: list
    future: asyncio.Future
    rows: int
    key: tuple


class Batcher:
    """One model's queue and the task that batches it (start() and stop() on the server's loop)."""

    def __init__(self, entry: ModelEntry, metrics: Metrics, max_batch: int, batch_delay_ms: float, max_queue: int,
                 timeout_s: float):
        self.entry, self.metrics = entry, metrics
        self.max_batch, self.delay_s, self.max_queue, self.timeout_s = max_batch, batch_delay_ms / 1000, max_queue, \
            timeout_s
        self.queue: asyncio.Queue | None = None
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.queue = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    @property
    def depth(self) -> int:
        return self.queue.qsize() if self.queue is not None else 0

    async def infer(self, inputs: list) -> list:
        """The model's outputs for one request's inputs, run in some batch."""
        if self.queue.qsize() >= self.max_queue:
            raise ServeError(f"model '{self.entry.name}' queue is full ({self.max_queue} waiting)", 503)
        loop = asyncio.get_running_loop()
        key = stack_key(inputs)
        first = next((a for a in inputs if type(a) is np.ndarray), None)
        rows = first.shape[0] if self.entry.batchable and first is not None and first.ndim else 1
        pending = _Pending(inputs, loop.create_future(), rows, key)
        self.queue.put_nowait(pending)
        # A timer that fails the future, not asyncio.timeout around a shield: that is a context manager,
        # a task lookup and a second future a request (30% of this function's time). A request that
        # timed out while queued is dropped by the batcher, which runs only futures not yet done.
        timer = loop.call_later(self.timeout_s, _time_out, pending.future, self.entry.name, self.timeout_s)
        try:
            return await pending.future
        finally:
            timer.cancel()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        entry, queue = self.entry, self.queue
        carry = None
        while True:
            first = carry if carry is not None else await queue.get()
            carry = None
            batch = [first]
            rows = first.rows
            # Wait for company only when others are already queued: a lone request runs at once, and under
            # load the requests that arrive while a batch runs form the next batch.
            # The batch waits at most batch_delay_ms, and not past a lull of ARRIVAL_GAP_S: a few clients'
            # requests arrive together, and waiting out the delay after the last of them only idled the
            # model (8 clients: 2600 req/s batched, 4200 unbatched).
            if entry.batchable and self.max_batch > 1 and not queue.empty():
                last_arrival = loop.time()
                deadline = last_arrival + self.delay_s
                while rows < self.max_batch:
                    if not queue.empty():
                        nxt = queue.get_nowait()  # under load, what is queued: no timeout to arm
                        last_arrival = loop.time()
                    else:
                        remaining = min(deadline, last_arrival + ARRIVAL_GAP_S) - loop.time()
                        if remaining <= 0:
                            break
                        try:
                            async with asyncio.timeout(remaining):
                                nxt = await queue.get()
                        except TimeoutError:
                            break
                        last_arrival = loop.time()
                    if nxt.key != first.key or rows + nxt.rows > self.max_batch:
                        carry = nxt  # a different shape or too many rows: it starts the next batch
                        break
                    batch.append(nxt)
                    rows += nxt.rows
            self.metrics.batch(entry.name, len(batch))
            live = [p for p in batch if not p.future.done()]
            if not live:
                continue
            try:
                results = await loop.run_in_executor(None, run_batch, entry, [p.inputs for p in live])
                for p, r in zip(live, results):
                    if not p.future.done():
                        p.future.set_exception(r) if isinstance(r, ServeError) else p.future.set_result(r)
            except Exception as exc:  # the model failed at run time: every request in the batch gets a 500
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(ServeError(f"model '{entry.name}' failed: {type(exc).__name__}: "
                                                          f"{exc}", 500))


def _time_out(future: asyncio.Future, model: str, seconds: float) -> None:
    if not future.done():
        future.set_exception(ServeError(f"model '{model}' did not answer within {seconds} s", 504))
