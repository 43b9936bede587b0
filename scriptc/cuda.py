"""scriptc.cuda: CUDA availability (cupy plus a GPU); on machines without them every call says why."""

from __future__ import annotations


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


def current_device() -> int:
    require()
    return 0


def synchronize() -> None:
    require()
