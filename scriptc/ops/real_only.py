"""The ops torch refuses for complex inputs, with the error torch raises (torch 2.13, CPU).

An entry is the name of torch's kernel (the error is NotImplementedError '"<kernel>" not implemented for
'ComplexFloat''), (exception type, message) where torch words it otherwise, or a function of the call's
arguments giving either. Eager calls and the
interpreter check it before the kernel runs (ops/execute.py), so numpy never silently drops the
imaginary part.
"""

from __future__ import annotations

from . import OPS

_CLAMP = (NotImplementedError, "clamp is not supported for complex types")
_SORT = (RuntimeError, " Sort does not support complex dtypes on CPU")


def _round(args):
    """round(x) and round(x, decimals=d) are different kernels in torch."""
    return "round_cpu" if len(args) > 1 and args[1] else "round_vml_cpu"


def _rounding(name):
    return (NotImplementedError, f"{name} is not supported for complex inputs")


def _reduction(name):
    return (RuntimeError, f"{name}(): does not support complex input")


def _elementwise(name):
    return (RuntimeError, f"{name} not implemented for complex tensors.")


REAL_ONLY = {
    "relu": _CLAMP, "clamp": _CLAMP, "clamp_min": _CLAMP, "clamp_max": _CLAMP, "hardtanh": _CLAMP, "relu6": _CLAMP,
    "floor": _rounding("floor"), "ceil": _rounding("ceil"), "trunc": _rounding("trunc"), "round": _round,
    "round.scalar": "round_cpu",
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead."),
    "maximum": _elementwise("maximum"), "minimum": _elementwise("minimum"), "fmax": _elementwise("fmax"),
    "fmin": _elementwise("fmin"), "heaviside": (RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "max": "max_all", "min": "min_all", "max.dim": _reduction("max"), "min.dim": _reduction("min"),
    "argmax": _reduction("argmax"), "argmin": _reduction("argmin"), "amax": "max_values_cpu", "amin": "min_values_cpu",
    "aminmax": "aminmax_cpu", "histc": "aminmax_cpu",
    "sort": _SORT, "argsort": _SORT, "msort": _SORT, "topk": (RuntimeError, " topk does not support complex dtypes on CPU"),
    "median": "median_cpu", "nanmedian": "median_cpu", "median.dim": "median_out", "nanmedian.dim": "median_out",
    "kthvalue": "kthvalue_cpu", "mode": "mode_cpu", "cummax": "cummax_cpu", "cummin": "cummin_cpu",
    "bincount": "bincount_cpu", "bucketize": "searchsorted_out_cpu", "searchsorted": "searchsorted_out_cpu",
    "unique": "unique",
    "lt": "lt_cpu", "gt": "gt_cpu", "le": "le_cpu", "ge": "ge_cpu",
    "fmod": "fmod_cpu", "remainder": "remainder_cpu", "atan2": "atan2_cpu", "floor_divide": "div_floor_cpu",
    "copysign": "copysign_cpu", "nextafter": "nextafter_cpu", "xlogy": "xlogy_cpu", "frac": "frac_cpu",
    "bitwise_and": "bitwise_and_cpu", "bitwise_or": "bitwise_or_cpu", "bitwise_xor": "bitwise_xor_cpu",
    "bitwise_not": "bitwise_not_cpu", "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu",
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "erf": "erf_vml_cpu", "erfc": "erfc_vml_cpu", "erfinv": "erfinv_vml_cpu", "lgamma": "lgamma_vml_cpu",
    "digamma": "digamma", "logit": "logit_cpu", "i0": "i0_vml_cpu",
    "gelu": "GeluKernelImpl", "softplus": "softplus_cpu", "leaky_relu": "leaky_relu_cpu", "elu": "elu_cpu",
    "celu": "elu_cpu", "selu": "elu_cpu", "hardsigmoid": "hardsigmoid_cpu", "hardswish": "hardswish_cpu",
    "mish": "mish_cpu", "hardshrink": "hardshrink_cpu",
    "logsigmoid": "log_sigmoid_cpu", "softshrink": "softshrink_check", "threshold": "threshold_cpu",
    "glu": "glu_cpu", "prelu": "prelu_cpu",
    "max_pool1d": "max_pool1d_impl", "max_pool2d": "max_pool2d", "max_pool3d": "max_pool3d",
    "special_entr": "entr_cpu", "special_erfcx": "erfcx_cpu", "special_ndtr": "erf_vml_cpu",
    "special_log_ndtr": "log_ndtr_cpu", "special_ndtri": "ndtri_cpu", "special_xlog1py": "xlog1py_cpu",
    "special_i0e": "i0e_cpu", "special_i1": "i1_cpu", "special_i1e": "i1e_cpu", "special_zeta": "zeta_cpu",
    **{f"special_{name}": f"{name}_cpu" for name in (
        "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai", "modified_bessel_k0", "modified_bessel_k1",
        "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1", "spherical_bessel_j0", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
        "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
        "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")},
}

for _name, _error in REAL_ONLY.items():
    _op = OPS[_name]
    _op.real_only = _error
    if _op.inplace is not None:
        _op.inplace.real_only = _error
