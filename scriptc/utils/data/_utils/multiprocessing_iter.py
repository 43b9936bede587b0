"""The main process's side of DataLoader workers: hand out tasks, receive batches in order, watch
for dead workers, shut everything down.

Tasks and results travel on shared-memory rings (rings.py), one pair per worker: a batch that is
ready when the main process asks for it costs no system call, and a worker with tasks queued
never waits for a message. Up to prefetch_factor * num_workers tasks are outstanding; a task goes
to the next worker in turn (or, when no batch can depend on its worker, to the least busy one)
with the blocks (shared_batches.py) the main process has finished with since that worker's last
task. The first tasks are in the rings before the workers start, so each starts on its first
batch at once; when the sampler runs out, each worker is told it has no more tasks and exits as
soon as it has made its last batch, while the main process still returns the last ones. Batches
are returned in task order (or as they arrive with in_order=False). Each worker also has a
channel (a Unix socket pair) for messages too big for a slot and for new blocks' descriptors; a
worker that dies is seen by its sentinel within a wait slice.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import select
import signal
import time

from scriptc.utils.data._utils.channel import channel_pair
from scriptc.utils.data._utils.rings import WorkerRings
from scriptc.utils.data._utils.shared_batches import ReceivedBlocks
from scriptc.utils.data._utils.worker import ExceptionWrapper, task_payload, worker_loop
from scriptc.utils.data.dataloader import _BaseDataLoaderIter

__all__ = ["MultiProcessingDataLoaderIter"]

# How long shutdown waits for a worker to finish its current batch and exit, before terminating
# it (torch waits as long); after a failure the workers are terminated at once.
_GRACE_PERIOD = 5.0
_JOIN_TIMEOUT = 30.0
_PICKLED_FINISH = pickle.dumps(("finish",), pickle.HIGHEST_PROTOCOL)
_PICKLED_RESET = pickle.dumps(("reset",), pickle.HIGHEST_PROTOCOL)


class MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Iterates once over the DataLoader's dataset with worker processes (see the module doc)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:  # torch's check: with no batch prefetched none would ever be asked for
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        self._any_worker = _batches_independent_of_worker(loader)
        context = loader.multiprocessing_context or multiprocessing.get_context()
        # Workers started by fork inherit the blocks of the loader's last iterator (SpareBlocks).
        spares = loader._spare_blocks if context.get_start_method() == "fork" else None
        inherited = (spares.hand_out(self._num_workers, (self._prefetch_factor + 2) * self._num_workers)
                     if spares is not None else [[] for _ in range(self._num_workers)])
        self._workers, self._channels, self._blocks = [], [], []
        self._shutdown = False
        # A ring holds at most every outstanding task, plus a reset or finish message.
        self._rings = WorkerRings(self._num_workers, self._prefetch_factor * self._num_workers + 1,
                                  any_result=not self._in_order)
        try:
            worker_ends = []
            for _ in range(self._num_workers):
                main_end, worker_end = channel_pair()
                self._channels.append(main_end)
                worker_ends.append(worker_end)
                self._blocks.append(ReceivedBlocks(spares, inherited[len(self._blocks)]))
            self._reset(loader, first_iter=True)  # the first tasks wait in the rings for the workers
            for worker_id, worker_end in enumerate(worker_ends):
                process = context.Process(
                    target=worker_loop,
                    args=(self._rings, worker_id, worker_end, self._dataset_kind, self._dataset, self._auto_collation,
                          self._collate_fn, self._drop_last, self._base_seed, loader.worker_init_fn, self._num_workers,
                          self._prefetch_factor, inherited[worker_id]),
                    daemon=True)
                try:
                    process.start()
                finally:
                    worker_end.close()  # the worker has its own; ours would hide the worker's death
                self._workers.append(process)
        except BaseException:
            for worker_end in worker_ends:
                worker_end.close()
            self._shutdown_workers()
            raise
        self._sentinels = select.poll()
        for process in self._workers:
            self._sentinels.register(process.sentinel, select.POLLIN)

    # --- epochs ---------------------------------------------------------------------------------
    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to return (in order)
        self._task_worker: dict[int, int] = {}  # outstanding task -> its worker
        self._workers_status = [True] * self._num_workers
        self._workers_pending = [0] * self._num_workers  # sent and not yet answered
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        self._sampler_done = False
        if not first_iter:  # persistent workers: start their datasets over, dropping stale batches
            for worker_id in range(self._num_workers):
                self._rings.put_task(worker_id, _PICKLED_RESET, self._channels[worker_id])
            if self._in_order:
                for worker_id in range(self._num_workers):
                    while self._take_result(worker_id)[0] != "reset":
                        pass
            else:
                resets = 0
                while resets < self._num_workers:
                    resets += self._take_any_result()[1][0] == "reset"
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # --- tasks out, batches in --------------------------------------------------------------------
    def _try_put_index(self) -> None:
        if self._sampler_done:
            return
        try:
            index = self._next_index()
        except StopIteration:
            self._sampler_done = True
            if not self._persistent_workers:  # each worker exits once it has made its last batch
                for worker_id in range(self._num_workers):
                    if self._workers_status[worker_id]:
                        self._rings.put_task(worker_id, _PICKLED_FINISH, self._channels[worker_id])
            return
        if self._any_worker and self._in_order:
            # the worker with the least work queued, so that one a busy machine runs less often
            # than the others does not hold every batch up; which worker makes a batch is not
            # visible in it (_batches_independent_of_worker)
            worker_id = min(range(self._num_workers), key=self._workers_pending.__getitem__)
        else:
            share = self._prefetch_factor * self._num_workers // max(sum(self._workers_status), 1)
            for _ in range(self._num_workers):  # the next active worker, if any
                worker_id = next(self._worker_queue_idx_cycle)
                if self._workers_status[worker_id] and (self._in_order or self._workers_pending[worker_id] < share):
                    break
            else:
                return
        task = task_payload(self._send_idx, index, self._blocks[worker_id].take_freed())
        self._rings.put_task(worker_id, task, self._channels[worker_id])
        self._task_worker[self._send_idx] = worker_id
        self._workers_pending[worker_id] += 1
        self._send_idx += 1

    def _take_result(self, worker_id: int) -> tuple:
        """The worker's next message, waiting for it."""
        try:
            payload, fds = self._rings.take_result(worker_id, self._channels[worker_id], self._wait_bounds)
        except (EOFError, ConnectionResetError):
            self._worker_died(worker_id)
        return self._blocks[worker_id].unpack(payload, fds)

    def _take_any_result(self) -> tuple[int, tuple]:
        """(worker id, message) of the next message from any worker (in_order=False), waiting for one."""
        try:
            worker_id, payload, fds = self._rings.take_any_result(self._channels, self._wait_bounds)
        except (EOFError, ConnectionResetError):  # (only the worker being read from can be at fault)
            self._worker_died(self._dead_worker())
        return worker_id, self._blocks[worker_id].unpack(payload, fds)

    def _wait_bounds(self) -> tuple:
        """(deadline, check) of a wait for a batch: the timeout's end, and what the wait runs
        between its slices: raise when a worker died or the deadline passed."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None

        def check() -> None:
            dead = self._dead_worker()
            if dead is not None:
                self._worker_died(dead)
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        return deadline, check

    def _dead_worker(self) -> int | None:
        """A worker that exited without being told it had no more tasks, if any."""
        for fd, _ in self._sentinels.poll(0):
            worker_id = next(k for k, process in enumerate(self._workers) if process.sentinel == fd)
            if not self._rings.finished(worker_id):
                return worker_id
            self._sentinels.unregister(fd)
        return None

    def _worker_died(self, worker_id: int):
        process = self._workers[worker_id]
        process.join(_JOIN_TIMEOUT)  # it is dead or dying: this collects its exit code
        code = process.exitcode
        if code is not None and code < 0:
            how = f"is killed by signal: {signal.strsignal(-code) or -code}"
        else:
            how = f"exited with code {code}"
        self._shutdown_workers(grace_period=0)
        raise RuntimeError(f"DataLoader worker (pid(s) {process.pid}) exited unexpectedly: the worker {how}.")

    def _next_data(self):
        while True:
            if self._in_order:
                while self._rcvd_idx < self._send_idx and not self._workers_status[self._task_worker[self._rcvd_idx]]:
                    del self._task_worker[self._rcvd_idx]  # its worker ran out before making it
                    self._rcvd_idx += 1
                if self._rcvd_idx == self._send_idx:
                    return self._end_epoch()
                worker_id = self._task_worker[self._rcvd_idx]
                message = self._take_result(worker_id)  # a worker answers its tasks in order: this is rcvd_idx's
                self._rcvd_idx += 1
            else:
                if not any(pending and active for pending, active in zip(self._workers_pending, self._workers_status)):
                    return self._end_epoch()
                worker_id, message = self._take_any_result()
            kind, task = message[0], message[1]
            del self._task_worker[task]
            self._workers_pending[worker_id] -= 1
            if kind == "end":  # an IterableDataset worker ran out
                self._workers_status[worker_id] = False
                self._try_put_index()
                continue
            self._try_put_index()
            data = message[2]
            if isinstance(data, ExceptionWrapper):
                data.reraise()
            return data

    def _end_epoch(self):
        if not self._persistent_workers:
            self._shutdown_workers()
        raise StopIteration

    # --- shutdown ---------------------------------------------------------------------------------
    def _shutdown_workers(self, grace_period: float = _GRACE_PERIOD) -> None:
        """Stop the workers, wait up to grace_period for them (then terminate them), and close the
        channels and rings; the blocks of batches still in use unmap when those batches die."""
        if self._shutdown:
            return
        self._shutdown = True
        for worker_id in range(len(self._workers)):
            self._rings.stop(worker_id)
        for process in self._workers:
            process.join(grace_period)
            if process.is_alive():
                process.terminate()
                process.join(_JOIN_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()
        for channel in self._channels:
            channel.close()
        for blocks in self._blocks:
            blocks.close()
        self._rings.close()

    def __del__(self):
        if getattr(self, "_rings", None) is not None:
            self._shutdown_workers()


def _batches_independent_of_worker(loader) -> bool:
    """Whether a batch comes out the same whichever worker makes it: rows of a TensorDataset (or
    a Subset of one) gathered by default_collate, with no worker_init_fn. Then nothing random or
    worker-specific runs for it, and tasks may go to the least busy worker instead of in turn."""
    from scriptc.utils.data._utils.collate import default_collate
    from scriptc.utils.data.dataset import Subset, TensorDataset

    dataset = loader.dataset
    while type(dataset) is Subset:
        dataset = dataset.dataset
    return type(dataset) is TensorDataset and loader.collate_fn is default_collate and loader.worker_init_fn is None
