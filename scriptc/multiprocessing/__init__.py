"""torch.multiprocessing: Python's multiprocessing, with tensors shared through shared memory.

Everything in `multiprocessing` is here (Process, Queue, SimpleQueue, Pipe, get_context,
set_start_method, ...). Importing this module registers reductions so that a tensor put on a
queue or pipe, or passed to a spawned Process, arrives as a view of the same shared memory
(the sender's storage moves there in place: see `Tensor.share_memory_`). `spawn` runs a
function in several processes with torch's error reporting.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from scriptc.multiprocessing.reductions import init_reductions
from scriptc.multiprocessing.spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
           "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException"]
__all__ += multiprocessing.__all__

# Storages travel as file descriptors (torch's default on Linux); there is no other strategy here.
_SHARING_STRATEGIES = {"file_descriptor"}


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how CPU tensors are shared; only 'file_descriptor' exists here."""
    if new_strategy not in _SHARING_STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_SHARING_STRATEGIES}")


def get_sharing_strategy() -> str:
    return "file_descriptor"


def get_all_sharing_strategies() -> set:
    return set(_SHARING_STRATEGIES)


init_reductions()
