"""The window functions of torch.signal.windows, each M points long (keyword-only options after M)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import scriptc
from scriptc.tensors import Tensor

_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _checked_dtype(name: str, M: int, dtype, layout):
    """The dtype to compute in, after torch's checks on the length, layout and dtype."""
    dtype = scriptc.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not scriptc.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (scriptc.float32, scriptc.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype, requires_grad: bool) -> Tensor | None:
    """The empty and one-point windows (None for longer ones)."""
    if M == 0:
        return scriptc.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return scriptc.ones((1,), dtype=dtype, requires_grad=requires_grad)
    return None


def _points(start, step, M: int, dtype, requires_grad: bool) -> Tensor:
    """M evenly spaced points from `start`, `step` apart."""
    return scriptc.linspace(start, start + (M - 1) * step, M, dtype=dtype, requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:
    """The length a window's shape is laid over: M - 1 when symmetric, M when periodic (sym=False)."""
    return M if not sym and M > 1 else M - 1


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=scriptc.strided, device=None, requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau); `center` defaults to the window's middle (only periodic windows take one)."""
    dtype = _checked_dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    center = _span(M, sym) / 2.0 if center is None else center
    return scriptc.exp(-scriptc.abs(_points(-center / tau, 1 / tau, M, dtype, requires_grad)))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """The sine window sin(pi (n + 0.5) / M)."""
    dtype = _checked_dtype("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return scriptc.sin(_points(0.5 * step, step, M, dtype, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """exp(-(n - centre)^2 / (2 std^2))."""
    dtype = _checked_dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, requires_grad)
    scale = 1 / (std * math.sqrt(2))
    points = _points(-_span(M, sym) / 2.0 * scale, scale, M, dtype, requires_grad)
    return scriptc.exp(-(points ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / span - 1)^2)) / I0(beta)."""
    dtype = _checked_dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    beta_t = scriptc.tensor(beta, dtype=dtype)
    step = 2.0 * beta_t / (M if not sym else M - 1)
    end = scriptc.minimum(beta_t, -beta_t + (M - 1) * step)
    points = scriptc.linspace(-beta, end.item(), M, dtype=dtype, requires_grad=requires_grad)
    return scriptc.i0(scriptc.sqrt(beta_t * beta_t - points ** 2)) / scriptc.i0(beta_t)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
                   requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a[i] cos(2 pi i n / span): the family of Hann, Hamming, Blackman and Nuttall."""
    dtype = _checked_dtype("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    points = _points(0, step, M, dtype, requires_grad)
    signed = scriptc.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype)
    orders = scriptc.arange(signed.shape[0], dtype=dtype)
    return (signed.unsqueeze(-1) * scriptc.cos(orders.unsqueeze(-1) * points)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=scriptc.strided,
                    device=None, requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / span)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """0.54 - 0.46 cos(2 pi n / span)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
         requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / span)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / span) + 0.08 cos(4 pi n / span)."""
    _checked_dtype("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """The four-term Nuttall window (minimum side lobes)."""
    return general_cosine(M, a=list(_NUTTALL), sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=scriptc.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The triangular window 1 - |2n / span - 1|."""
    dtype = _checked_dtype("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, requires_grad)
    return 1 - scriptc.abs(_points(-1, 2 / (M if not sym else M - 1), M, dtype, requires_grad))
