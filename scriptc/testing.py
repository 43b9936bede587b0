"""torch.testing: assert_close (torch's default tolerances per dtype and its mismatch messages) and
make_tensor (random test tensors in torch's default value ranges)."""

from __future__ import annotations

import cmath
import collections.abc
import math
import warnings
from typing import Any, Callable

import numpy as np

from scriptc.types import (
    ALL_DTYPES,
    COMPLEX,
    FLOAT,
    bfloat16,
    bool_,
    complex64,
    complex128,
    default_float,
    dtype,
    float16,
    float32,
    float64,
    int64,
    promote_pair,
)

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# {dtype: (rtol, atol)}, torch.testing._comparison's table; other dtypes compare exactly.
_DTYPE_PRECISIONS = {
    float16: (0.001, 1e-5),
    bfloat16: (0.016, 1e-5),
    float32: (1.3e-6, 1e-5),
    float64: (1e-7, 1e-7),
    complex64: (1.3e-6, 1e-5),
    complex128: (1e-7, 1e-7),
}
# Python numbers compare with the tolerances of these dtypes.
_NUMBER_DTYPES = {int: int64, float: float64, complex: complex128}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message and the item path it occurred at."""

    def __init__(self, kind: type, msg: str, path: tuple = ()):
        super().__init__(msg)
        self.kind, self.msg, self.path = kind, msg, path

    def to_error(self, msg: str | Callable[[str], str] | None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.msg
        if self.path:
            text += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.path)}"
        return self.kind(msg(text) if callable(msg) else text)


def _tolerances(dtypes, rtol, atol, path) -> tuple[float, float]:
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _diff_line(kind: str, diff, index, tol: float, equality: bool) -> str:
    line = f"{kind.title()} difference: {diff}" if index is None else f"Greatest {kind} difference: {diff} at index {index}"
    return line + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier: str, extra: str, abs_diff, abs_index, atol: float, rel_diff, rel_index,
                  rtol: float) -> str:
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    msg += _diff_line("absolute", abs_diff, abs_index, atol, equality)
    msg += _diff_line("relative", rel_diff, rel_index, rtol, equality)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _compare_numbers(actual, expected, path, rtol, atol, equal_nan, check_dtype, **_) -> None:
    actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(v)] for v in (actual, expected)], rtol, atol, path)
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), path)


def _as_values(t) -> np.ndarray:
    """A tensor's elements as a numpy array (bfloat16 as its float32 values)."""
    from scriptc.tensors.conversion import _values
    return _values(t.detach()._data)


def _round_to_bfloat16(values: np.ndarray) -> np.ndarray:
    from scriptc.ops import bfloat16 as bfloat16_storage
    return bfloat16_storage.to_float32(np, bfloat16_storage.from_values(np, values))


def _isclose(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """torch.isclose on arrays of one dtype: equal values (infinities included) or a finite error within
    atol + rtol * |expected|, computed in that dtype."""
    with np.errstate(invalid="ignore", over="ignore"):
        close = actual == expected
        if equal_nan and actual.dtype.kind in "fc":
            close |= np.isnan(actual) & np.isnan(expected)
        if rtol == 0 and atol == 0:
            return close
        if actual.dtype.kind == "b":
            actual, expected = actual.astype(np.int64), expected.astype(np.int64)
        error = np.abs(actual - expected)
        allowed = atol + rtol * np.abs(expected)
        return close | (np.isfinite(error) & (error <= allowed))


def _greatest(diff: np.ndarray, shape: tuple) -> tuple:
    """The greatest element of a flat difference array and its index in `shape`; like torch.max, a NaN
    (the first one) is the greatest."""
    nans = np.flatnonzero(np.isnan(diff)) if diff.dtype.kind == "f" else ()
    flat = int(nans[0]) if len(nans) else int(np.argmax(diff))
    return diff[flat].item(), tuple(int(i) for i in np.unravel_index(flat, shape))


def _tensor_mismatch_msg(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol: float,
                         atol: float, rounding: Callable[[np.ndarray], np.ndarray]) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    shape = matches.shape
    actual, expected, matches = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    integral = actual.dtype.kind in "biu"
    if integral:
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = rounding(np.abs(actual - expected))
        abs_diff[matches] = 0
        if integral:  # torch's int64 true division: the default float dtype
            rel_diff = abs_diff.astype(default_float().np) / np.abs(expected).astype(default_float().np)
        else:
            rel_diff = rounding(abs_diff / np.abs(expected))
        rel_diff[matches] = 0
    abs_value, abs_index = _greatest(abs_diff, shape)
    rel_value, rel_index = _greatest(rel_diff, shape)
    return _mismatch_msg("Tensor-likes", extra, abs_value, abs_index, atol, rel_value, rel_index, rtol)


def _compare_tensors(actual, expected, path, rtol, atol, equal_nan, check_device, check_dtype, check_layout,
                     check_stride, **_) -> None:
    rtol, atol = _tolerances([actual.dtype, expected.dtype], rtol, atol, path)

    def fail(attribute: str, a, e):
        raise _Mismatch(AssertionError, f"The values for attribute '{attribute}' do not match: {a} != {e}.", path)

    if actual.shape != expected.shape:
        fail("shape", actual.shape, expected.shape)
    if actual.layout != expected.layout:
        if check_layout:
            fail("layout", actual.layout, expected.layout)
    elif check_stride and actual.stride() != expected.stride():
        fail("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        fail("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        fail("dtype", actual.dtype, expected.dtype)
    if actual.layout != expected.layout:
        actual, expected = (t.to_dense() if t.is_sparse else t for t in (actual, expected))
    if actual.dtype != expected.dtype:
        common = promote_pair(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    a, e = _as_values(actual), _as_values(expected)
    if not isinstance(equal_nan, bool):
        raise TypeError(f"isclose(): argument 'equal_nan' must be bool, not {type(equal_nan).__name__}")
    matches = _isclose(a, e, rtol, atol, equal_nan)
    if matches.all():
        return
    if a.ndim == 0:
        msg = _scalar_mismatch_msg(a.item(), e.item(), rtol, atol)
    else:
        # bfloat16 values compare as float32; torch computes their differences in bfloat16
        rounding = _round_to_bfloat16 if actual.dtype is bfloat16 else (lambda values: values)
        msg = _tensor_mismatch_msg(a, e, matches, rtol, atol, rounding)
    raise _Mismatch(AssertionError, msg, path)


def _is_sequence(value) -> bool:
    return isinstance(value, collections.abc.Sequence) and not isinstance(value, str)


def _compare_pair(actual, expected, path: tuple, options: dict) -> None:
    """Compare two leaves with the first of torch's pairs that takes them (None, bool, number, tensor-like)."""
    from scriptc.tensors import Tensor, as_tensor
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)
        return
    booleans = (bool, np.bool_)
    if isinstance(actual, booleans) and isinstance(expected, booleans):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path)
        return
    numbers = (int, float, complex, np.number)
    if isinstance(actual, numbers) and isinstance(expected, numbers) \
            and not isinstance(actual, bool) and not isinstance(expected, bool):
        _compare_numbers(actual, expected, path, **options)
        return
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if related and (options["allow_subclasses"] or type(actual) is type(expected)):
        try:
            tensors = [v if isinstance(v, Tensor) else as_tensor(v) for v in (actual, expected)]
        except (TypeError, ValueError):
            tensors = None
        if tensors is not None:
            _compare_tensors(*tensors, path, **options)
            return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.", path)


def _compare(actual, expected, path: tuple, options: dict) -> None:
    """Walk sequences and mappings in step and compare their leaves; raise _Mismatch at the first failure."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            path)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], (*path, i), options)
    elif isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                                            f"Additional keys in the actual mapping: "
                                            f"{sorted(actual_keys - expected_keys)}", path)
        try:
            keys = sorted(actual_keys)
        except TypeError:
            keys = list(actual_keys)
        for key in keys:
            _compare(actual[key], expected[key], (*path, key), options)
    else:
        _compare_pair(actual, expected, path, options)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that `actual` and `expected` are close, as torch.testing.assert_close.

    Tensors (and numpy arrays compared with numpy arrays) must have the same shape, and unless
    switched off the same dtype, device and layout; their values match where
    |actual - expected| <= atol + rtol * |expected| (NaNs only with equal_nan=True). Without
    rtol/atol the dtype's defaults apply (float32: 1.3e-6 / 1e-5, float64: 1e-7 / 1e-7, float16:
    1e-3 / 1e-5, bfloat16: 1.6e-2 / 1e-5, integers and bool: exact). Python numbers, bools and None
    compare as torch does; sequences and mappings compare item by item. A mismatch raises
    AssertionError with torch's message (mismatched count, greatest absolute and relative
    differences and their indices, the failing item); `msg` replaces it, or edits it if callable.
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as mismatch:
        raise mismatch.to_error(msg) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated torch.testing.assert_allclose: assert_close without dtype checks, NaNs equal by default
    and non-tensors turned into tensors first (warns FutureWarning, as torch does)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. "
                  "Please use `torch.testing.assert_close()` instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from scriptc.tensors import Tensor, tensor
    actual, expected = (v if isinstance(v, Tensor) else tensor(v) for v in (actual, expected))
    if rtol is None and atol is None:
        rtol, atol = _tolerances([actual.dtype, expected.dtype], None, None, ())
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


def _value_range(d: dtype, low, high, lowest: float, highest: float, default_low: float, default_high: float):
    """make_tensor's [low, high) for dtype d: defaults filled in, checked and clamped to what d holds."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and d.category >= FLOAT:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {d} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if d.category < FLOAT:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype: dtype, device=None, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    """A tensor of `shape` with values drawn uniformly from [low, high) (from the default generator),
    as torch.testing.make_tensor. Default ranges: bool [0, 2), uint8 [0, 10), signed integers
    [-9, 10), floating and complex [-9, 9); given bounds are clamped to the dtype's finite range.
    noncontiguous=True gives a strided view; exclude_zero replaces zeros with 1 (bool/integers) or
    the dtype's smallest normal number."""
    import scriptc
    from scriptc.dtype_info import finfo, iinfo
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got noncontiguous={noncontiguous} and memory_format={memory_format}")
    if dtype not in ALL_DTYPES:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). "
                        "To request support, file an issue at: https://github.com/pytorch/pytorch/issues")
    integral = dtype.category < FLOAT
    if requires_grad and integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is bool_:
        low, high = _value_range(dtype, low, high, 0, 2, 0, 2)
        result = scriptc.randint(low, high, shape, dtype=dtype, device=device)
    elif integral:
        info = iinfo(dtype)
        low, high = _value_range(dtype, low, high, info.min, info.max + (dtype is not int64), -9, 10)
        result = scriptc.randint(low, high, shape, dtype=dtype, device=device)
    else:
        info = finfo(dtype)
        low, high = _value_range(dtype, low, high, info.min, info.max, -9, 9)
        result = scriptc.empty(shape, dtype=dtype, device=device)
        target = scriptc.view_as_real(result) if dtype.category == COMPLEX else result
        if high - low >= info.max:  # the range's width overflows the dtype: draw half of it and double
            target.uniform_(low / 2, high / 2).mul_(2)
        else:
            target.uniform_(low, high)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else finfo(dtype).tiny
    if not integral:
        result.requires_grad = requires_grad
    return result
