"""torch.fft: the discrete Fourier transforms (fft, ifft, rfft, irfft, hfft, ihfft and their 2-D and
n-D forms), fftfreq/rfftfreq and fftshift/ifftshift, on numpy's pocketfft.

Gradients are PyTorch's (fft_r2c_backward, fft_c2r_backward): the adjoint of a transform is the
opposite transform with the dual normalization ('backward' <-> 'forward'), fitted back to the
input's length, with the one-sided spectrum's mirrored half accounted for.
"""

from __future__ import annotations

from scriptc.errors import ShapeError
from scriptc.types import TensorType, default_float

from . import register
from .matrix import conj, torch_name
from .rules import is_known
from .schema import FACTORY, OPAQUE, SHAPE

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
# kind: c2c (fft, ifft), r2c (rfft), c2r (irfft), hermitian (hfft: complex half spectrum -> real),
# ihermitian (ihfft: real -> complex half spectrum); `forward`: the direction of a c2c transform.
_TRANSFORMS = (("fft", "c2c", True), ("ifft", "c2c", False), ("rfft", "r2c", True), ("irfft", "c2r", False),
               ("hfft", "hermitian", False), ("ihfft", "ihermitian", True))


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _normalize_axis(dim, rank):
    if rank == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})")
    return dim % rank


def plan(shape, size, dim, form, kind):
    """(signal sizes, axes) of a transform of an input of `shape`: PyTorch's defaults and checks.

    form '1' takes (n, dim), forms '2' and 'n' take (s, dim)."""
    rank = len(shape)
    if form == "1":
        axes = [_normalize_axis(dim, rank)]
        sizes = [size] if size is not None else [None]
    else:
        dims = None if dim is None else list(dim)
        sizes = None if size is None else list(size)
        if sizes is not None and dims is not None and len(sizes) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if dims is None:
            dims = list(range(rank - len(sizes), rank)) if sizes is not None else list(range(rank))
        axes = [_normalize_axis(d, rank) for d in dims]
        if len(set(axes)) != len(axes):
            raise RuntimeError("FFT dims must be unique")
        sizes = [None] * len(axes) if sizes is None else [None if s == -1 else s for s in sizes]
    halved = kind in ("c2r", "hermitian")
    for i, axis in enumerate(axes):
        if sizes[i] is None:
            sizes[i] = 2 * (shape[axis] - 1) if halved and i == len(axes) - 1 else shape[axis]
        if sizes[i] < 1:
            raise RuntimeError(f"Invalid number of data points ({sizes[i]}) specified")
    return sizes, axes


def _as_complex(xp, x):
    if x.dtype.kind == "c":
        return x
    if x.dtype.kind != "f":  # integers transform in the default float dtype
        x = _as_real(xp, x, "fft")
    return x.astype(xp.complex128 if x.dtype == xp.float64 else xp.complex64)


def _as_real(xp, x, name):
    if x.dtype.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {torch_name(x.dtype)}")
    if x.dtype.kind == "f":
        return x if x.dtype.itemsize >= 4 else x.astype(xp.float32)
    floating = default_float()  # integers transform in the default float dtype (float32 below 4 bytes)
    return x.astype(floating.np if floating.itemsize >= 4 else xp.float32)


def _fit(xp, g, axes, lengths):
    """g cut or zero-padded along `axes` to `lengths` (a gradient back to its input's sizes)."""
    for axis, length in zip(axes, lengths):
        have = g.shape[axis]
        if have > length:
            g = g[(slice(None),) * axis + (slice(0, length),)]
        elif have < length:
            pad = list(g.shape)
            pad[axis] = length - have
            g = xp.concatenate([g, xp.zeros(pad, g.dtype)], axis=axis)
    return g


def _transform(xp, kind, forward, x, sizes, axes, norm, name):
    if kind == "c2c":
        transform = xp.fft.fftn if forward else xp.fft.ifftn
        return transform(_as_complex(xp, x), sizes, axes, norm)
    if kind == "r2c":
        return xp.fft.rfftn(_as_real(xp, x, name), sizes, axes, norm)
    if kind == "c2r":
        return xp.fft.irfftn(_as_complex(xp, x), sizes, axes, norm)
    if kind == "hermitian":
        return xp.fft.irfftn(conj(_as_complex(xp, x)), sizes, axes, _DUAL[norm])
    return conj(xp.fft.rfftn(_as_real(xp, x, name), sizes, axes, _DUAL[norm]))


def _r2c_grad(xp, g, sizes, axes, norm):
    """The adjoint of rfftn(., sizes, axes, norm): the spectrum completed with zeros, inverted."""
    full = _fit(xp, g, axes[-1:], sizes[-1:])
    return xp.fft.ifftn(full, sizes, axes, _DUAL[norm]).real


def _c2r_grad(xp, g, sizes, axes, norm):
    """The adjoint of irfftn(., sizes, axes, norm): a one-sided spectrum whose entries that stand for
    two (their mirror image is not stored) count twice."""
    spectrum = xp.fft.rfftn(g, sizes, axes, _DUAL[norm])
    doubled = sizes[-1] - spectrum.shape[axes[-1]]
    if doubled > 0:
        index = [slice(None)] * spectrum.ndim
        index[axes[-1]] = slice(1, 1 + doubled)
        spectrum[tuple(index)] *= 2
    return spectrum


def _grad(kind, forward, form):
    def grad(ctx, g):
        xp, x = ctx.xp, ctx.self
        norm = _norm(ctx.norm)
        sizes, axes = plan(x.shape, ctx.args[1], ctx.args[2], form, kind)
        if kind == "c2c":
            back = xp.fft.ifftn if forward else xp.fft.fftn
            gx = back(g, sizes, axes, _DUAL[norm])
        elif kind == "r2c":
            gx = _r2c_grad(xp, g, sizes, axes, norm)
        elif kind == "c2r":
            gx = _c2r_grad(xp, g, sizes, axes, norm)
        elif kind == "hermitian":
            gx = conj(_c2r_grad(xp, g, sizes, axes, _DUAL[norm]))
        else:
            gx = _r2c_grad(xp, conj(g), sizes, axes, _DUAL[norm])
        return (_fit(xp, gx, axes, [x.shape[a] for a in axes]),) + (None,) * 3
    return grad


def _kernel(kind, forward, form, name):
    def kernel(xp, x, size=None, dim=-1, norm=None):
        sizes, axes = plan(x.shape, size, dim, form, kind)
        return _transform(xp, kind, forward, x, sizes, axes, _norm(norm), name)
    return kernel


def _rule(kind, form):
    def rule(x, size=None, dim=-1, norm=None):
        d = x.dtype
        floating = None if d is None else (d.to_real() if d.category >= 2 and d.itemsize >= 4 else default_float())
        dtype = None if d is None else (floating if kind in ("c2r", "hermitian") else floating.to_complex())
        if x.shape is None or not all(isinstance(s, int) for s in x.shape) or not is_known(size) or not is_known(dim):
            return TensorType(dtype, None, x.device)
        sizes, axes = plan(tuple(x.shape), size, dim, form, kind)
        shape = list(x.shape)
        for axis, n in zip(axes, sizes):
            shape[axis] = n
        if kind in ("r2c", "ihermitian"):
            shape[axes[-1]] = sizes[-1] // 2 + 1
        return TensorType(dtype, tuple(shape), x.device)
    return rule


_SIGNATURES = {"1": "(self: Tensor, n: int? = None, dim: int = -1, norm: str? = None) -> Tensor",
               "2": "(self: Tensor, s: int[]? = None, dim: int[] = [-2, -1], norm: str? = None) -> Tensor",
               "n": "(self: Tensor, s: int[]? = None, dim: int[]? = None, norm: str? = None) -> Tensor"}
_DOCS = {"fft": "The discrete Fourier transform", "ifft": "The inverse discrete Fourier transform",
         "rfft": "The Fourier transform of a real signal, as its one-sided (non-negative frequency) half",
         "irfft": "The inverse of rfft: a real signal from its one-sided spectrum",
         "hfft": "The Fourier transform of a Hermitian-symmetric signal given by its one-sided half (a real result)",
         "ihfft": "The inverse of hfft: the one-sided half of the inverse transform of a real signal"}

for _name, _kind, _forward in _TRANSFORMS:
    for _form, _suffix, _where in (("1", "", "over dim"), ("2", "2", "over the last two dims (or dim)"),
                                   ("n", "n", "over dim (every dim by default)")):
        register(f"fft_{_name}{_suffix}{_SIGNATURES[_form]}", OPAQUE, _kernel(_kind, _forward, _form, _name),
                 shape=_rule(_kind, _form), grad=_grad(_kind, _forward, _form), save=("self",), complex_aware=True,
                 method=False, function=False, doc=f"{_DOCS[_name]} {_where}; norm 'backward', 'ortho' or 'forward'.")


def _frequencies(half):
    def kernel(xp, n, d=1.0, dtype=None, device=None):
        if n < 0:
            raise ShapeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
        values = xp.fft.rfftfreq(n, d) if half else xp.fft.fftfreq(n, d)
        return values.astype((dtype or default_float()).np)
    return kernel


def _frequencies_rule(half):
    def rule(n, d=1.0, dtype=None, device=None):
        length = None if not isinstance(n, int) else (n // 2 + 1 if half else n)
        return TensorType(dtype or default_float(), (length,))
    return rule


_FREQUENCIES = "(n: int, d: float = 1.0, *, dtype: ScalarType? = None, device: Device? = None) -> Tensor"
register("fft_fftfreq" + _FREQUENCIES, FACTORY, _frequencies(False), shape=_frequencies_rule(False), method=False,
         function=False, doc="The sample frequencies of an n-point fft with sample spacing d.")
register("fft_rfftfreq" + _FREQUENCIES, FACTORY, _frequencies(True), shape=_frequencies_rule(True), method=False,
         function=False, doc="The sample frequencies of an n-point rfft with sample spacing d.")


def _shift(name):
    def kernel(xp, x, dim=None):
        axes = None if dim is None else [_normalize_axis(d, x.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
        return getattr(xp.fft, name)(x, axes)
    return kernel


_SHIFT = "(self: Tensor, dim: int[]? = None) -> Tensor"
register("fft_fftshift" + _SHIFT, SHAPE, _shift("fftshift"), shape=lambda x, dim=None: x,
         grad=lambda ctx, g: (_shift("ifftshift")(ctx.xp, g, ctx.dim), None), method=False, function=False,
         doc="Rolls the zero frequency to the middle of dim (every dim by default).")
register("fft_ifftshift" + _SHIFT, SHAPE, _shift("ifftshift"), shape=lambda x, dim=None: x,
         grad=lambda ctx, g: (_shift("fftshift")(ctx.xp, g, ctx.dim), None), method=False, function=False,
         doc="The inverse of fftshift.")
