"""Cases for the window functions and logspace (windows.py): numpy's windows as references."""

from __future__ import annotations

import numpy as np

from .cases import Case


def _periodic(window):
    """torch's periodic window: the symmetric one of length N + 1 without its last point."""
    return lambda n, periodic=True, *params: window(n + 1, *params)[:n] if periodic and n > 1 else window(n, *params)


def _window_cases(window):
    ref = _periodic(window)
    return [Case((8,), ref, grad=False, label="periodic"), Case((7, False), ref, grad=False, label="symmetric"),
            Case((1,), ref, grad=False, label="one"), Case((0,), ref, grad=False, label="empty")]


def _hamming(n, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * np.arange(n) / max(n - 1, 1)) if n > 1 else np.ones(n)


CASES = {
    "hann_window": _window_cases(np.hanning),
    "hamming_window": _window_cases(_hamming) + [
        Case((6, True, 0.5, 0.3), _periodic(_hamming), grad=False, label="alpha beta")],
    "blackman_window": _window_cases(np.blackman),
    "bartlett_window": _window_cases(np.bartlett),
    "kaiser_window": _window_cases(lambda n, beta=12.0: np.kaiser(n, beta)) + [
        Case((9, False, 3.0), lambda n, p, beta: np.kaiser(n, beta), grad=False, label="beta")],
    "logspace": [Case((0, 2, 5), lambda a, b, n: np.logspace(a, b, n), grad=False),
                 Case((-1, 3, 4, 2.0), lambda a, b, n, base: np.logspace(a, b, n, base=base), grad=False,
                      label="base 2")],
}
