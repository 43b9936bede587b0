"""The rings between the main process and its DataLoader workers: one shared-memory region per
iterator holding, for each worker, a ring of tasks (main process -> worker) and a ring of results
(worker -> main process), each with a process-shared counting semaphore.

A message is written into the next slot of a ring and the ring's semaphore is posted; the other
side takes the semaphore and reads the slot. Taking a semaphore whose count is up is an atomic
decrement and posting one nobody waits on an atomic increment (glibc's sem_t is a futex), so a
batch that is already there costs no system call and wakes nothing: a process sleeps only when
what it waits for has not been made yet, and only then does the other side's post enter the
kernel to wake it. A message too big for a slot, or one that passes descriptors (a worker's new
shared-memory block), travels on the worker's channel (channel.py) and its slot says so; it is
sent before the slot is posted, so it is there when the slot is read.

Waits are sliced (_SLICE): between slices the waiting side checks that the other is alive (the
main process: the workers' sentinels; a worker: its channel, whose main end closes when the main
process dies), so a death is an error within a slice, never a hang.
"""

from __future__ import annotations

import ctypes
import errno
import select
import struct
import time


from scriptc.multiprocessing.shared_memory import SharedMapping, allocate, map_descriptor

__all__ = ["WorkerRings", "WorkerEnd"]

_SLICE = 0.1  # seconds a wait sleeps before checking that the other side is alive
_SLOT_BYTES = 4096  # a slot: an 8-byte length (_ON_CHANNEL: the message is on the channel), then the message
_ON_CHANNEL = -1
_LENGTH = struct.Struct("<q")
_SEMAPHORE_BYTES = 64  # a glibc sem_t is 32 bytes (16 on 32-bit systems); each gets its own cache line
# A worker's control block: its task and result semaphores, then words.
_TASK_SEMAPHORE, _RESULT_SEMAPHORE, _WORDS = 0, _SEMAPHORE_BYTES, 2 * _SEMAPHORE_BYTES
_STOP, _PUBLISHED, _FINISHED = 0, 1, 2  # words: stop at once; results published; exited after a "finish" task
_CONTROL_BYTES = _WORDS + 64
# The region: the semaphore every worker posts when results are taken from any worker (in_order=False),
# each worker's control block, then each worker's task ring and result ring.
_ANY_RESULT = 0

_libc = ctypes.CDLL(None, use_errno=True)
for _name in ("sem_init", "sem_post", "sem_trywait", "sem_timedwait"):
    getattr(_libc, _name).restype = ctypes.c_int
_libc.sem_init.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint)
_libc.sem_post.argtypes = _libc.sem_trywait.argtypes = (ctypes.c_void_p,)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc.sem_timedwait.argtypes = (ctypes.c_void_p, ctypes.POINTER(_Timespec))


class _Semaphore:
    """A process-shared semaphore at an address in a shared mapping (initialized by WorkerRings)."""

    __slots__ = ("address",)

    def __init__(self, address: int):
        self.address = address

    def post(self) -> None:
        if _libc.sem_post(self.address):
            code = ctypes.get_errno()
            raise OSError(code, f"sem_post failed: {errno.errorcode.get(code, code)}")

    def try_acquire(self) -> bool:
        return _libc.sem_trywait(self.address) == 0

    def acquire(self, seconds: float) -> bool:
        """Take the semaphore, waiting at most `seconds`; False when that passed first."""
        deadline = time.time() + seconds  # sem_timedwait's clock is CLOCK_REALTIME
        when = _Timespec(int(deadline), int(deadline % 1 * 1e9))
        while _libc.sem_timedwait(self.address, ctypes.byref(when)):
            code = ctypes.get_errno()
            if code == errno.ETIMEDOUT:
                return False
            if code != errno.EINTR:
                raise OSError(code, f"sem_timedwait failed: {errno.errorcode.get(code, code)}")
        return True


class WorkerRings:
    """The rings of one DataLoader iterator's workers (see the module doc). The main process makes
    it before starting the workers; a forked worker inherits it, a spawned one gets it pickled
    (its memory's descriptor travels with the spawn). `slots` bounds the messages a ring holds:
    the caller never has more outstanding."""

    def __init__(self, num_workers: int, slots: int, any_result: bool, mapping: SharedMapping | None = None):
        self.num_workers, self.slots, self.any_result = num_workers, slots, any_result
        self.rings_at = _SEMAPHORE_BYTES + num_workers * _CONTROL_BYTES
        nbytes = self.rings_at + num_workers * 2 * slots * _SLOT_BYTES
        fresh = mapping is None
        self.mapping = allocate(nbytes) if fresh else mapping
        self.memory = memoryview(self.mapping.array())
        base = self.mapping.address
        self.any_semaphore = _Semaphore(base + _ANY_RESULT)
        self.task_semaphores = [_Semaphore(base + self._control(k) + _TASK_SEMAPHORE) for k in range(num_workers)]
        self.result_semaphores = [_Semaphore(base + self._control(k) + _RESULT_SEMAPHORE) for k in range(num_workers)]
        # int64 memoryviews: reading an item costs 56 ns against a numpy array's 143, with no numpy scalar made
        self.words = [self.memory[self._control(k) + _WORDS:self._control(k) + _CONTROL_BYTES].cast("q")
                      for k in range(num_workers)]
        if fresh:
            for semaphore in [self.any_semaphore] + self.task_semaphores + self.result_semaphores:
                if _libc.sem_init(semaphore.address, 1, 0):
                    raise OSError(ctypes.get_errno(), "sem_init failed")
        self.tasks_written = [0] * num_workers  # main process: tasks written to each worker's ring
        self.results_read = [0] * num_workers  # main process: results read from each worker's ring

    def __reduce__(self):
        from multiprocessing.reduction import DupFd
        return _rebuild, (DupFd(self.mapping.fd), len(self.mapping), self.num_workers, self.slots, self.any_result)

    def _control(self, worker_id: int) -> int:
        return _SEMAPHORE_BYTES + worker_id * _CONTROL_BYTES

    def _slot(self, worker_id: int, ring: int, count: int) -> int:
        """Where message number `count` of a worker's task (ring 0) or result (ring 1) ring starts."""
        return self.rings_at + ((2 * worker_id + ring) * self.slots + count % self.slots) * _SLOT_BYTES

    def _write(self, at: int, payload: bytes, fds, channel) -> None:
        if fds or len(payload) > _SLOT_BYTES - 8:
            channel.send(payload, fds)
            _LENGTH.pack_into(self.memory, at, _ON_CHANNEL)
        else:
            _LENGTH.pack_into(self.memory, at, len(payload))
            self.memory[at + 8:at + 8 + len(payload)] = payload

    def _read(self, at: int, channel) -> tuple[bytes, list[int]]:
        length = _LENGTH.unpack_from(self.memory, at)[0]
        if length == _ON_CHANNEL:
            return channel.recv()
        return bytes(self.memory[at + 8:at + 8 + length]), []

    # --- the main process's side -----------------------------------------------------------------
    def put_task(self, worker_id: int, payload: bytes, channel) -> None:
        """Write a task message into the worker's ring and wake the worker if it waits for one."""
        count = self.tasks_written[worker_id]
        self._write(self._slot(worker_id, 0, count), payload, (), channel)
        self.tasks_written[worker_id] = count + 1
        self.task_semaphores[worker_id].post()

    def stop(self, worker_id: int) -> None:
        """Ask the worker to exit now, leaving the tasks in its ring."""
        self.words[worker_id][_STOP] = 1
        self.task_semaphores[worker_id].post()

    def finished(self, worker_id: int) -> bool:
        """Whether the worker exited after a "finish" task (not a death)."""
        return self.words[worker_id][_FINISHED] != 0

    def take_result(self, worker_id: int, channel, wait_bounds) -> tuple[bytes, list[int]]:
        """The worker's next result (payload, descriptors). When it is not there yet, waits for it
        in slices: wait_bounds() gives (deadline, check), the time.monotonic() the slices end by
        and what runs between them, raising when the wait must end (a worker died, the deadline
        passed)."""
        _wait(self.any_semaphore if self.any_result else self.result_semaphores[worker_id], wait_bounds)
        return self._take(worker_id, channel)

    def take_any_result(self, channels, wait_bounds) -> tuple[int, bytes, list[int]]:
        """(worker id, payload, descriptors) of a result from whichever worker has one (any_result
        rings), waiting as take_result does."""
        _wait(self.any_semaphore, wait_bounds)
        # The count taken stands for a result published before it was posted: one not yet read is there.
        worker_id = next(k for k in range(self.num_workers) if self.words[k][_PUBLISHED] > self.results_read[k])
        return (worker_id,) + self._take(worker_id, channels[worker_id])

    def _take(self, worker_id: int, channel) -> tuple[bytes, list[int]]:
        count = self.results_read[worker_id]
        message = self._read(self._slot(worker_id, 1, count), channel)
        self.results_read[worker_id] = count + 1
        return message

    def close(self) -> None:
        """Drop this side's view of the region (it unmaps when the last process lets go)."""
        self.memory.release()
        del self.words[:], self.mapping


def _wait(semaphore: _Semaphore, wait_bounds) -> None:
    if semaphore.try_acquire():
        return
    deadline, wait_check = wait_bounds()  # (only for a wait: a result that is there costs no clock read)
    while not semaphore.try_acquire():
        seconds = _SLICE if deadline is None else min(_SLICE, max(deadline - time.monotonic(), 0.0))
        if semaphore.acquire(seconds):
            return
        wait_check()


def _rebuild(fd, nbytes: int, num_workers: int, slots: int, any_result: bool) -> WorkerRings:
    return WorkerRings(num_workers, slots, any_result, map_descriptor(fd.detach(), nbytes, keep_fd=False))


class WorkerEnd:
    """A worker's side of its rings: take tasks, put results."""

    def __init__(self, rings: WorkerRings, worker_id: int, channel):
        self.rings, self.worker_id, self.channel = rings, worker_id, channel
        self.words = rings.words[worker_id]
        self.task_semaphore = rings.task_semaphores[worker_id]
        self.result_semaphore = rings.any_semaphore if rings.any_result else rings.result_semaphores[worker_id]
        self.tasks_read = self.results_written = 0
        self.hangup = select.poll()
        self.hangup.register(channel.fileno(), select.POLLHUP)

    def take_task(self) -> tuple[bytes, list[int]] | None:
        """The next task message; None when the main process asked this worker to stop. EOFError
        when the main process is gone."""
        while not self.task_semaphore.try_acquire() and not self.task_semaphore.acquire(_SLICE * 5):
            if self.hangup.poll(0):
                raise EOFError("the main process closed the DataLoader channel")
        if self.words[_STOP]:
            return None
        message = self.rings._read(self.rings._slot(self.worker_id, 0, self.tasks_read), self.channel)
        self.tasks_read += 1
        return message

    def put_result(self, payload: bytes, fds) -> None:
        """Write a result into the ring, publish it and wake the main process if it waits for one."""
        self.rings._write(self.rings._slot(self.worker_id, 1, self.results_written), payload, fds, self.channel)
        self.results_written += 1
        self.words[_PUBLISHED] = self.results_written
        self.result_semaphore.post()

    def mark_finished(self) -> None:
        """Say that this worker exits because it was told it has no more tasks (not a death)."""
        self.words[_FINISHED] = 1
