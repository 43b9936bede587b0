"""scriptc.cuda: CUDA availability (cupy plus a GPU); on machines without them every call says why."""

from __future__ import annotations

import sys

from scriptc.amp import cuda_amp as amp

# `import scriptc.cuda.amp` / `from torch.cuda.amp import autocast` find the module here (this module
# is not a package).
sys.modules[__name__ + ".amp"] = amp


def _probe() -> str | None:
    """None when a CUDA device is usable, else the reason it is not."""
    try:
        import cupy
    except ImportError:
        return "scriptc was installed without CUDA support: install the 'cuda' extra (cupy-cuda12x)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # cupy raises its own CUDARuntimeError without a driver
        return f"no CUDA driver or GPU is available ({exc})"
    if count == 0:
        return "no CUDA GPU was found"
    return None


_reason: list = []


def unavailable_reason() -> str | None:
    if not _reason:
        _reason.append(_probe())
    return _reason[0]


def is_available() -> bool:
    """True when cupy is installed and a CUDA GPU is present."""
    return unavailable_reason() is None


def device_count() -> int:
    if not is_available():
        return 0
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())


def require() -> None:
    """Raise RuntimeError saying why CUDA cannot be used here."""
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")
    raise RuntimeError("CUDA tensors are not supported by this build of scriptc yet")


def _needs_cuda(name: str, doc: str):
    """A torch.cuda entry point that, like a CPU-only PyTorch build's, raises RuntimeError saying
    why CUDA cannot be used (this build runs nothing on a GPU yet, even where one is present)."""
    def entry(*args, **kwargs):
        require()
    entry.__name__ = entry.__qualname__ = name
    entry.__doc__ = doc
    return entry


current_device = _needs_cuda("current_device", "The index of the selected GPU.")
synchronize = _needs_cuda("synchronize", "Wait for every queued kernel and copy on the device.")
current_stream = _needs_cuda("current_stream", "The stream kernels are queued on.")
stream = _needs_cuda("stream", "`with scriptc.cuda.stream(s):` queues the block's work on stream s.")
memory_allocated = _needs_cuda("memory_allocated", "Bytes held by tensors (cupy's memory pool).")
max_memory_allocated = _needs_cuda("max_memory_allocated", "Peak of memory_allocated().")
memory_reserved = _needs_cuda("memory_reserved", "Bytes the memory pool holds from the driver.")
max_memory_reserved = _needs_cuda("max_memory_reserved", "Peak of memory_reserved().")
memory_stats = _needs_cuda("memory_stats", "The memory pool's counters as a dict.")
empty_cache = _needs_cuda("empty_cache", "Return the pool's unused blocks to the driver.")
reset_peak_memory_stats = _needs_cuda("reset_peak_memory_stats", "Restart the max_memory_* peaks from now.")
initial_seed = _needs_cuda("initial_seed", "The seed of the current GPU's random generator.")
get_rng_state = _needs_cuda("get_rng_state", "The current GPU's random generator state as a uint8 tensor.")
set_rng_state = _needs_cuda("set_rng_state", "Restore the current GPU's random generator state.")


def manual_seed(seed: int) -> None:
    """Seed the current GPU's random generator. As in PyTorch, the call is deferred until CUDA is
    initialised, so without a GPU (and in this build, which runs nothing on one) it only checks
    that `seed` converts to int: seeding code written for GPUs runs unchanged on the CPU."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's random generator (deferred like manual_seed: a no-op without a GPU)."""
    int(seed)


def seed() -> None:
    """Seed the current GPU's generator from fresh entropy (deferred: a no-op without a GPU)."""


def seed_all() -> None:
    """Seed every GPU's generator from fresh entropy (deferred: a no-op without a GPU)."""


class device:
    """`with scriptc.cuda.device(i):` selects GPU i for the block."""

    def __init__(self, index):
        self.index = index

    def __enter__(self):
        require()

    def __exit__(self, *exc) -> bool:
        return False


class Stream:
    """A CUDA stream: work queued on it runs in order, concurrently with other streams."""

    def __init__(self, device=None, priority: int = 0):
        require()


class Event:
    """A marker in a stream, for timing (`enable_timing=True`) and cross-stream waits."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        require()
