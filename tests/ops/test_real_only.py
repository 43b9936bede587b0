"""Ops torch supports for real dtypes only refuse complex inputs with torch's error (never dropping the
imaginary part), against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")

CALLS = [
    "T.relu(z)", "T.clamp(z, 0, 1)", "T.clamp_min(z, 0)", "z.clamp_(0, 1)", "T.nn.functional.relu(z, inplace=True)",
    "T.nn.functional.relu6(z)", "T.nn.functional.hardtanh(z)", "T.floor(z)", "z.floor_()", "T.ceil(z)", "T.trunc(z)",
    "T.round(z)", "T.round(z, decimals=1)", "T.frac(z)", "T.sign(z)", "T.maximum(z, z)", "T.minimum(z, z)",
    "T.fmax(z, z)", "T.heaviside(z, z)", "T.max(z)", "T.max(z, 0)", "T.min(z, 0)", "T.argmax(z)", "T.argmin(z)",
    "T.amax(z)", "T.aminmax(z)", "T.histc(z)", "T.sort(z)", "T.argsort(z)", "T.msort(z)", "T.topk(z, 1)",
    "T.median(z)", "T.median(z, 0)", "T.kthvalue(z, 1)", "T.mode(z)", "T.cummax(z, 0)", "T.bincount(z)",
    "T.bucketize(z, z)", "T.unique(z)", "T.lt(z, z)", "T.gt(z, 0)", "T.fmod(z, 2)", "T.remainder(z, 2)",
    "T.atan2(z, z)", "T.floor_divide(z, z)", "T.copysign(z, z)", "T.xlogy(z, z)", "T.isposinf(z)", "T.signbit(z)",
    "T.erf(z)", "T.erfinv(z)", "T.lgamma(z)", "T.digamma(z)", "T.logit(z)", "T.i0(z)",
    "T.nn.functional.gelu(z)", "T.nn.functional.softplus(z)", "T.nn.functional.elu(z)", "T.nn.functional.selu(z)",
    "T.nn.functional.leaky_relu(z)", "T.nn.functional.hardswish(z)", "T.nn.functional.mish(z)",
    "T.nn.functional.logsigmoid(z)", "T.nn.functional.glu(z)", "T.nn.functional.threshold(z, 0.0, 0.0)",
    "T.nn.functional.max_pool2d(z.reshape(1, 1, 2, 2), 2)", "T.special.ndtr(z)", "T.special.zeta(z, z)",
    "T.special.bessel_j0(z)", "T.special.chebyshev_polynomial_t(z, z)",
    "T.bitwise_and(z.int(), z)", "T.bitwise_xor(z, z)", "T.bitwise_not(z)", "z.int() << z", "z.int() >> z",
    # a Python complex number promotes the call to a complex dtype too
    "T.bitwise_or(z.int(), 1j)", "T.remainder(z.real.double(), 1j)", "T.fmod(z.real, 2j)", "T.copysign(z.real, 1j)",
]


@pytest.mark.parametrize("code", CALLS)
def test_complex_input_raises_torch_error(code):
    errors = []
    for T in (torch, scriptc):
        z = T.tensor([1 + 2j, -1j, 3 + 0j, 0.5 - 0.5j])
        with pytest.raises(Exception) as caught:
            eval(code, {"T": T, "z": z})
        errors.append(caught.value)
    theirs, ours = errors
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_complex_double_is_named_as_torch_names_it():
    with pytest.raises(NotImplementedError, match="'ComplexDouble'"):
        scriptc.erf(scriptc.ones(2, dtype=scriptc.complex128))
