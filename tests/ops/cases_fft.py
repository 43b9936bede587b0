"""Reference cases for torch.fft (merged into cases.CASES): every transform on real and complex inputs,
padding and cutting to n / s, dims, and the three normalizations, against numpy.fft."""

from __future__ import annotations

import numpy as np

from .cases import Case, Complex

rng = np.random.default_rng(1729)


def rand(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def crand(*shape):
    return Complex(rand(*shape) + 1j * rand(*shape))


def _fft(name):
    return lambda torch, *a, **k: getattr(torch.fft, name)(*a, **k)


def _np_1d(name):
    fn = getattr(np.fft, name)
    return lambda x, n=None, dim=-1, norm=None: fn(x, n, dim, norm)


def _np_nd(name, default_dims=None):
    fn = getattr(np.fft, name)

    def ref(x, s=None, dim=default_dims, norm=None):
        return fn(x, s, dim, norm)
    return ref


def _hfftn(x, s=None, dim=None, norm=None):
    dual = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.fft.irfftn(np.conj(x), s, dim, dual)


def _ihfftn(x, s=None, dim=None, norm=None):
    dual = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.conj(np.fft.rfftn(x, s, dim, dual))


def _cases_1d(name, inputs):
    ref = _np_1d(name)
    return [Case((inputs(8),), ref, torch=_fft(name)),
            Case((inputs(3, 8), 6, 1, "ortho"), ref, torch=_fft(name), label="cut ortho"),
            Case((inputs(5, 3), 7, 0, "forward"), ref, torch=_fft(name), label="padded dim 0 forward")]


def _cases_nd(name, inputs, ref, suffix):
    default = (-2, -1) if suffix == "2" else None
    full = f"{name}{suffix}"
    return [Case((inputs(4, 6),), lambda x: ref(x, None, default), torch=_fft(full)),
            Case((inputs(2, 4, 6), [3, 8], [0, 2], "ortho"), ref, torch=_fft(full), label="s dims ortho"),
            Case((inputs(3, 5),), lambda x, norm: ref(x, None, default, norm), kwargs={"norm": "forward"},
                 torch=_fft(full), label="forward")]


CASES: dict[str, list[Case]] = {
    "fft_fft": _cases_1d("fft", rand) + [Case((crand(6),), _np_1d("fft"), torch=_fft("fft"), label="complex")],
    "fft_ifft": _cases_1d("ifft", crand),
    "fft_rfft": _cases_1d("rfft", rand),
    "fft_irfft": _cases_1d("irfft", crand),
    "fft_hfft": _cases_1d("hfft", crand),
    "fft_ihfft": _cases_1d("ihfft", rand),
    "fft_fftfreq": [Case((5,), np.fft.fftfreq, grad=False, torch=_fft("fftfreq")),
                    Case((6, 0.5), np.fft.fftfreq, grad=False, torch=_fft("fftfreq"), label="spacing")],
    "fft_rfftfreq": [Case((7, 2.0), np.fft.rfftfreq, grad=False, torch=_fft("rfftfreq"))],
    "fft_fftshift": [Case((rand(5),), np.fft.fftshift, torch=_fft("fftshift")),
                     Case((rand(3, 4), [1]), lambda x, d: np.fft.fftshift(x, d), torch=_fft("fftshift"),
                          label="dim")],
    "fft_ifftshift": [Case((rand(5, 2),), np.fft.ifftshift, torch=_fft("ifftshift"))],
}
for _name, _inputs, _ref in (("fft", crand, "fftn"), ("ifft", crand, "ifftn"), ("rfft", rand, "rfftn"),
                             ("irfft", crand, "irfftn"), ("hfft", crand, None), ("ihfft", rand, None)):
    _reference = {"hfft": _hfftn, "ihfft": _ihfftn}.get(_name) or _np_nd(_ref)
    for _suffix in ("2", "n"):
        CASES[f"fft_{_name}{_suffix}"] = _cases_nd(_name, _inputs, _reference, _suffix)
