"""spawn / start_processes: run fn(i, *args) in nprocs processes and join them, as torch does.

A process that raises makes `join` terminate the others and raise ProcessRaisedException with
the child's traceback; one that dies (a signal, a non-zero exit) raises ProcessExitedException.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "start_processes"]

log = logging.getLogger(__name__)


class ProcessException(Exception):
    """A spawned process failed; `error_index` and `error_pid` say which."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i: int, args: tuple, error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted us while stopping the group
    except Exception:
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes start_processes started; `join()` waits for them and reports the first failure."""

    def __init__(self, processes: list, error_files: list):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def _join_all(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to `timeout` for processes to finish. True when all have exited cleanly, False
        when some still run; on the first failure the rest are terminated (after grace_period) and
        the failure is raised."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_the_rest(grace_period)
        raise self._failure(error_index)

    def _stop_the_rest(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via SIGKILL", process.pid)
                process.kill()
            process.join()

    def _failure(self, index: int) -> ProcessException:
        process = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            exitcode = process.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                return ProcessExitedException(f"process {index:d} terminated with signal {name}", error_index=index,
                                              error_pid=process.pid, exit_code=exitcode, signal_name=name)
            return ProcessExitedException(f"process {index:d} terminated with exit code {exitcode:d}",
                                          error_index=index, error_pid=process.pid, exit_code=exitcode)
        with open(self.error_files[index], "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(self.error_files[index])
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n" + original_trace
        return ProcessRaisedException(msg, index, process.pid)


def _error_file_path() -> str:
    """A path no file has yet: the child writes its traceback there only if it raises."""
    with tempfile.NamedTemporaryFile(prefix="scriptc-errorfile-", suffix=".pickle", delete=False) as fh:
        name = fh.name
    os.unlink(name)
    return name


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start nprocs processes running fn(i, *args) with the given start method ('spawn', 'fork',
    'forkserver'). With join=True, wait for all (raising the first failure); else return their
    ProcessContext."""
    mp = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        error_file = _error_file_path()
        process = mp.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """Spawn nprocs processes that run fn(i, *args) (fn must be picklable: a module-level function).

    If one of them raises or exits non-zero, the others are terminated and ProcessRaisedException
    (with the child's traceback) or ProcessExitedException is raised. Returns None when join is
    True, else the ProcessContext. Always uses the spawn start method, as torch does: for another
    one, call start_processes.
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t scriptc.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
