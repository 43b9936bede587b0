"""The main process's side of DataLoader workers: hand out tasks, receive batches in order, watch
for dead workers, shut everything down.

Each worker has a channel (a Unix socket pair) and its ReceivedBlocks (the mappings of its
shared-memory blocks). Up to prefetch_factor * num_workers tasks are outstanding; a task goes
to the next worker in turn (or, when no batch can depend on its worker, to the least busy one)
with the blocks the main process has finished with since that worker's last task. Batches are
returned in task order (or as they arrive with in_order=False). A worker that dies closes its
channel and its process sentinel fires: the next wait sees it and raises.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import select
import signal

from scriptc.utils.data._utils.channel import channel_pair
from scriptc.utils.data._utils.shared_batches import ReceivedBlocks
from scriptc.utils.data._utils.worker import ExceptionWrapper, worker_loop
from scriptc.utils.data.dataloader import _BaseDataLoaderIter

__all__ = ["MultiProcessingDataLoaderIter"]

# How long shutdown waits for a worker to finish its current batch and exit, before terminating
# it (torch waits as long); after a failure the workers are terminated at once.
_GRACE_PERIOD = 5.0
_JOIN_TIMEOUT = 30.0


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
        self._workers, self._channels, self._blocks = [], [], []
        self._shutdown = False
        try:
            for worker_id in range(self._num_workers):
                main_end, worker_end = channel_pair()
                self._channels.append(main_end)
                self._blocks.append(ReceivedBlocks())
                process = context.Process(
                    target=worker_loop,
                    args=(worker_end, self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                          self._drop_last, self._base_seed, loader.worker_init_fn, worker_id, self._num_workers,
                          self._prefetch_factor),
                    daemon=True)
                try:
                    process.start()
                finally:
                    worker_end.close()  # the worker has its own; ours would hide the worker's death
                self._workers.append(process)
        except BaseException:
            self._shutdown_workers()
            raise
        # Waiting for any worker's message, or (in order) for one worker's only: a batch that
        # comes early from another worker then waits in its channel instead of waking this
        # process for nothing. Either way a worker's death ends the wait.
        self._any_wait = select.epoll()
        self._worker_waits = [select.epoll() for _ in self._workers]
        self._fd_owners: dict[int, tuple] = {}  # descriptor -> ("channel" or "sentinel", worker id)
        for worker_id, (channel, process) in enumerate(zip(self._channels, self._workers)):
            for wait in (self._any_wait, self._worker_waits[worker_id]):
                wait.register(channel.fileno(), select.EPOLLIN)
            for wait in [self._any_wait] + self._worker_waits:
                wait.register(process.sentinel, select.EPOLLIN)
            self._fd_owners[channel.fileno()] = ("channel", worker_id)
            self._fd_owners[process.sentinel] = ("sentinel", worker_id)
        self._reset(loader, first_iter=True)

    # --- epochs ---------------------------------------------------------------------------------
    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to return
        self._task_info: dict[int, tuple] = {}  # task -> (worker,) while outstanding, (worker, data) when early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers  # sent and not yet returned to the user
        self._workers_pending = [0] * self._num_workers  # sent and not yet answered
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: start their datasets over, dropping stale batches
            for worker_id in range(self._num_workers):
                self._send(worker_id, ("reset",))
            resets = 0
            while resets < self._num_workers:
                _, message = self._get_data()
                resets += message[0] == "reset"
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # --- tasks out, batches in --------------------------------------------------------------------
    def _send(self, worker_id: int, message: tuple) -> None:
        self._channels[worker_id].send(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        if self._any_worker and self._in_order:
            # the worker with the least work queued, so that one a busy machine runs less often
            # than the others does not hold every batch up; which worker makes a batch is not
            # visible in it (_batches_independent_of_worker)
            worker_id = min(range(self._num_workers), key=self._workers_pending.__getitem__)
        else:
            for _ in range(self._num_workers):  # the next active worker, if any
                worker_id = next(self._worker_queue_idx_cycle)
                if self._workers_status[worker_id] and (
                        self._in_order or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status)):
                    break
            else:
                return
        self._send(worker_id, ("task", self._send_idx, index, self._blocks[worker_id].take_freed()))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._workers_pending[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self, expected: int | None = None) -> tuple[int, tuple]:
        """(worker id, message) of the next message from any worker, looking first (without a
        system call to wait) at the `expected` worker's; in order, only the expected worker's.
        Raises when a worker died or the timeout passed."""
        received = self._receive(expected, block=False) if expected is not None else None
        wait = self._worker_waits[expected] if expected is not None and self._in_order else self._any_wait
        while received is None:
            events = wait.poll(self._timeout if self._timeout > 0 else -1)
            if not events:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            owners = [self._fd_owners[fd] for fd, _ in events]
            readable = [worker_id for kind, worker_id in owners if kind == "channel"]
            if not readable:  # only a sentinel: a worker exited with nothing left to say
                self._worker_died(owners[0][1])
            received = self._receive(readable[0], block=True)
        return received

    def _receive(self, worker_id: int, block: bool) -> tuple[int, tuple] | None:
        try:
            message = self._channels[worker_id].recv(block)
        except (EOFError, ConnectionResetError):
            self._worker_died(worker_id)
        if message is None:
            return None
        return worker_id, self._blocks[worker_id].unpack(*message)

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
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._workers_status[info[0]]):
                    break  # its batch is here, or its worker is still producing it
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            worker_id, message = self._get_data(expected=self._task_info[self._rcvd_idx][0])
            kind, task = message[0], message[1]
            self._tasks_outstanding -= 1
            self._workers_pending[worker_id] -= 1
            if kind == "end":  # an IterableDataset worker ran out
                self._workers_status[worker_id] = False
                self._workers_num_tasks[worker_id] -= 1
                self._try_put_index()
                continue
            data = message[2]
            if task != self._rcvd_idx:
                if not self._in_order:
                    self._task_info.pop(task)
                    return self._process_data(data, worker_id)
                self._task_info[task] += (data,)
            else:
                self._task_info.pop(task)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _process_data(self, data, worker_id: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    # --- shutdown ---------------------------------------------------------------------------------
    def _shutdown_workers(self, grace_period: float = _GRACE_PERIOD) -> None:
        """Stop the workers, wait up to grace_period for them (then terminate them), and close the
        channels; the blocks of batches still in use unmap when those batches die."""
        if self._shutdown:
            return
        self._shutdown = True
        for worker_id in range(len(self._workers)):
            try:
                self._send(worker_id, ("stop",))
            except OSError:
                pass  # it is gone already
        if hasattr(self, "_any_wait"):
            for wait in [self._any_wait] + self._worker_waits:
                wait.close()
        for channel in self._channels:
            channel.close()
        for process in self._workers:
            process.join(grace_period)
            if process.is_alive():
                process.terminate()
                process.join(_JOIN_TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()
        for blocks in self._blocks:
            blocks.close()

    def __del__(self):
        if getattr(self, "_workers", None) is not None:
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
