"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While it is on, every recorded Node keeps the traceback of the forward call that made it; a
gradient formula that raises prints that traceback as a warning before the error propagates, and
(with check_nan) a formula that returns NaN raises torch's RuntimeError naming the backward function.
"""

from __future__ import annotations

import functools
import threading
import traceback
import warnings

import numpy as np

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


class _AnomalyMode(threading.local):
    enabled = False
    check_nan = True


_anomaly = _AnomalyMode()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return _anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return _anomaly.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off in this thread (torch.set_anomaly_enabled)."""
    _anomaly.enabled, _anomaly.check_nan = enabled, check_nan


class _AnomalySwitch:
    def __init__(self, mode: bool, check_nan: bool):
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled, _anomaly.check_nan = mode, check_nan

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        _anomaly.enabled, _anomaly.check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on for its block (debugging only:
    recording tracebacks slows every op)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled, _anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc) -> bool:
        _anomaly.enabled, _anomaly.check_nan = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return run


class set_detect_anomaly(_AnomalySwitch):
    """Turn anomaly detection on or off (`set_detect_anomaly(True)`), or for a `with` block only."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(mode, check_nan)


def note_forward(node) -> None:
    """Keep the forward traceback on a freshly recorded Node (called while anomaly detection is on)."""
    node.metadata["traceback_"] = traceback.format_stack()[:-2]


def anomaly_checked(node, run_formula):
    """run_formula() (node's gradient formula) with anomaly detection's checks (the engine calls
    this only while anomaly detection is on)."""
    try:
        grads = run_formula()
    except Exception:
        _warn_forward_trace(node)
        raise
    if _anomaly.check_nan:
        for index, g in enumerate(grads):
            if any(_has_nan(item) for item in (g if isinstance(g, list) else (g,))):
                _warn_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")
    return grads


def _has_nan(g) -> bool:
    if g is None:
        return False
    data = getattr(g, "_data", g)
    data = data.evaluate() if hasattr(data, "evaluate") else np.asarray(data)
    return data.dtype.kind in "fc" and bool(np.isnan(data).any())


def _warn_forward_trace(node) -> None:
    trace = node.metadata.get("traceback_")
    if trace is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                      "anomaly during forward pass for more information.", stacklevel=4)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                  + "".join(trace), stacklevel=4)
