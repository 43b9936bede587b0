"""torch.stft / torch.istft against torch 2.13: values, shapes, dtypes, gradients and errors."""

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _pair(data, window=None):
    ours = scriptc.tensor(data)
    theirs = torch.tensor(data)
    return ours, theirs


def _close(ours, theirs, tol=1e-5):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=3, window="hann"),
    dict(n_fft=16, win_length=10, window="hamming", normalized=True),
    dict(n_fft=15, hop_length=5, center=False),
    dict(n_fft=16, pad_mode="constant", onesided=False),
    dict(n_fft=16, win_length=8, window="hann", center=False, align_to_window=True),
    dict(n_fft=12, pad_mode="replicate", window="hann", return_complex=False),
]


def _windows(case, dtype):
    kind = case.pop("window", None)
    if kind is None:
        return None, None
    n = case.get("win_length", case["n_fft"])
    return getattr(scriptc, f"{kind}_window")(n, dtype=getattr(scriptc, dtype)), \
        getattr(torch, f"{kind}_window")(n, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_matches_torch(case, batched):
    case = dict(case)
    case.setdefault("return_complex", True)
    data = np.random.default_rng(0).standard_normal((3, 70) if batched else (70,)).astype(np.float32)
    ours_window, torch_window = _windows(case, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = scriptc.stft(scriptc.tensor(data), window=ours_window, **case)
        theirs = torch.stft(torch.tensor(data), window=torch_window, **case)
    _close(ours, theirs, 1e-4)


def test_stft_complex_input_and_method_and_double():
    data = np.random.default_rng(1).standard_normal((2, 40)) + 1j * np.random.default_rng(2).standard_normal((2, 40))
    _close(scriptc.tensor(data).stft(8, hop_length=2), torch.tensor(data).stft(8, hop_length=2), 1e-9)
    real = np.random.default_rng(3).standard_normal(33)
    _close(scriptc.tensor(real).stft(8, return_complex=True), torch.tensor(real).stft(8, return_complex=True), 1e-9)


ISTFT_CASES = [
    dict(n_fft=16, window="hann"),
    dict(n_fft=16, hop_length=3, window="hann", normalized=True),
    dict(n_fft=16, win_length=12, hop_length=4, window="hamming", length=60),
    dict(n_fft=16, window="hann", length=90),
    dict(n_fft=15, hop_length=5, center=False),
]


@pytest.mark.parametrize("case", ISTFT_CASES)
@pytest.mark.parametrize("batched", [False, True])
def test_istft_matches_torch(case, batched):
    case = dict(case)
    data = np.random.default_rng(4).standard_normal((2, 64) if batched else (64,))
    ours_window, torch_window = _windows(case, "float64")
    spectrum_args = {k: v for k, v in case.items() if k not in ("length",)}
    spectrum = torch.stft(torch.tensor(data), window=torch_window, return_complex=True, **spectrum_args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.istft(spectrum, window=torch_window, **case)
        ours = scriptc.istft(scriptc.tensor(spectrum.numpy()), window=ours_window, **case)
    _close(ours, theirs, 1e-9)


def test_istft_roundtrip_and_two_sided_complex():
    data = np.random.default_rng(5).standard_normal(50) + 1j * np.random.default_rng(6).standard_normal(50)
    spectrum = torch.stft(torch.tensor(data), 8, return_complex=True)
    theirs = torch.istft(spectrum, 8, return_complex=True, onesided=False)
    ours = scriptc.tensor(spectrum.numpy()).istft(8, return_complex=True, onesided=False)
    _close(ours, theirs, 1e-9)
    np.testing.assert_allclose(ours.numpy(), data, atol=1e-9)


def test_stft_istft_gradients_match_torch():
    data = np.random.default_rng(7).standard_normal(40)
    ours_x = scriptc.tensor(data, requires_grad=True)
    torch_x = torch.tensor(data, requires_grad=True)
    for x, lib in ((ours_x, scriptc), (torch_x, torch)):
        window = lib.hann_window(8, dtype=lib.float64)
        spectrum = lib.stft(x, 8, hop_length=2, window=window, return_complex=True)
        weights = lib.arange(spectrum.numel(), dtype=lib.float64).reshape(spectrum.shape) / 100
        back = lib.istft(spectrum * weights, 8, hop_length=2, window=window, length=40)
        ((back * lib.cos(lib.arange(40, dtype=lib.float64))).sum() + spectrum.abs().sum()).backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), torch_x.grad.numpy(), atol=1e-9)


def _error(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fn(lib)
    return type(info.value).__name__, str(info.value).replace("torch.", "").replace("scriptc.", "")


def _x(lib, *shape, dtype="float32"):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


STFT_ERRORS = [
    lambda t: t.stft(_x(t, 100), 16),
    lambda t: t.stft(_x(t, 2, 3, 100), 16, return_complex=True),
    lambda t: t.stft(_x(t, 100), 200, return_complex=True, center=False),
    lambda t: t.stft(_x(t, 100), 0, return_complex=True),
    lambda t: t.stft(_x(t, 100), 16, hop_length=0, return_complex=True),
    lambda t: t.stft(_x(t, 100), 16, win_length=20, return_complex=True),
    lambda t: t.stft(_x(t, 100), 16, window=t.ones(10), return_complex=True),
    lambda t: t.stft(_x(t, 100), 16, window=t.ones(2, 8), win_length=8, return_complex=True),
    lambda t: t.stft(_x(t, 100, dtype="complex64"), 16, onesided=True, return_complex=True),
    lambda t: t.stft(_x(t, 100), 16, return_complex=True, align_to_window=True),
    lambda t: t.stft(_x(t, 100, dtype="int32"), 16, return_complex=True),
]


@pytest.mark.parametrize("index", range(len(STFT_ERRORS)))
def test_stft_errors_match_torch(index):
    assert _error(scriptc, STFT_ERRORS[index]) == _error(torch, STFT_ERRORS[index])


def _spectrum(lib, frames=26, bins=9):
    return lib.ones(bins, frames, dtype=lib.complex64)


ISTFT_ERRORS = [
    lambda t: t.istft(_spectrum(t).real, 16),
    lambda t: t.istft(_spectrum(t), 16, return_complex=True),
    lambda t: t.istft(_spectrum(t), 16, onesided=False),
    lambda t: t.istft(_spectrum(t), 16, window=t.zeros(16)),
    lambda t: t.istft(_spectrum(t)[None, None], 16),
    lambda t: t.istft(_spectrum(t), 16, hop_length=0),
    lambda t: t.istft(_spectrum(t), 16, win_length=17),
    lambda t: t.istft(_spectrum(t), 16, window=t.ones(8)),
    lambda t: t.istft(_spectrum(t), 20),
]


@pytest.mark.parametrize("index", range(len(ISTFT_ERRORS)))
def test_istft_errors_match_torch(index):
    assert _error(scriptc, ISTFT_ERRORS[index]) == _error(torch, ISTFT_ERRORS[index])


def test_return_complex_false_warns_like_torch():
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        scriptc.stft(scriptc.ones(40), 8, return_complex=False)


def test_traced_stft_matches_eager_on_new_inputs():
    window = scriptc.hann_window(16)

    def magnitude(x):
        return scriptc.stft(x, 16, hop_length=4, window=window, return_complex=True).abs()

    traced = scriptc.jit.trace(magnitude, (scriptc.randn(2, 100),))
    fresh = scriptc.randn(2, 100)
    np.testing.assert_allclose(traced(fresh).numpy(), magnitude(fresh).numpy(), rtol=1e-6, atol=1e-6)
