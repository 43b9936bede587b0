"""torch.signal.windows against torch 2.13: values for both sym modes and dtypes, options, and errors."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "hamming", "hann", "kaiser", "nuttall"]
OPTIONS = {"exponential": dict(tau=2.5), "gaussian": dict(std=3.0), "kaiser": dict(beta=6.0)}


def _same(ours, theirs, tol):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_window_matches_torch(name, M, sym, dtype):
    options = dict(OPTIONS.get(name, {}), sym=sym)
    ours = getattr(scriptc.signal.windows, name)(M, dtype=getattr(scriptc, dtype), **options)
    theirs = getattr(torch.signal.windows, name)(M, dtype=getattr(torch, dtype), **options)
    _same(ours, theirs, 1e-5 if dtype == "float32" else 1e-12)


def _general_forms(lib):
    windows = lib.signal.windows
    return (windows.general_cosine(9, a=[0.5, 0.3, 0.2], sym=False), windows.general_hamming(9, alpha=0.6),
            windows.exponential(9, center=2.0, sym=False), windows.hann(8))


def test_general_forms_and_exponential_center():
    for ours, theirs in zip(_general_forms(scriptc), _general_forms(torch)):
        _same(ours, theirs, 1e-6)


def test_requires_grad_flows():
    window = scriptc.signal.windows.gaussian(5, requires_grad=True)
    window.sum().backward()


ERRORS = [
    lambda t: t.signal.windows.hann(-1),
    lambda t: t.signal.windows.hann(4, dtype=t.int64),
    lambda t: t.signal.windows.hann(4, layout=t.sparse_coo),
    lambda t: t.signal.windows.exponential(4, tau=0),
    lambda t: t.signal.windows.exponential(4, center=1.0),
    lambda t: t.signal.windows.gaussian(4, std=-1.0),
    lambda t: t.signal.windows.kaiser(4, beta=-1.0),
    lambda t: t.signal.windows.general_cosine(4, a=[]),
    lambda t: t.signal.windows.general_cosine(4, a=3),
    lambda t: t.signal.windows.blackman(-2),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    outcomes = []
    for lib in (scriptc, torch):
        with pytest.raises(Exception) as info:
            ERRORS[index](lib)
        outcomes.append((type(info.value).__name__, str(info.value).replace("torch.", "").replace("scriptc.", "")))
    assert outcomes[0] == outcomes[1]
