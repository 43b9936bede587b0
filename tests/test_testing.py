"""scriptc.testing against torch.testing: assert_close's verdicts, error types and messages; make_tensor's
ranges, dtypes and errors."""

import math

import numpy as np
import pytest

import scriptc
from scriptc.testing import assert_allclose, assert_close, make_tensor

torch = pytest.importorskip("torch")


def _outcome(lib, build, **options):
    """(exception type name, message) of lib.testing.assert_close on what build(lib) returns; names of
    the two libraries' types read alike."""
    actual, expected = build(lib)
    try:
        lib.testing.assert_close(actual, expected, **options)
    except Exception as exc:  # noqa: BLE001 - the comparison is of which exception and its text
        text = str(exc).replace("scriptc.tensors.core.", "torch.").replace("scriptc.", "torch.")
        return type(exc).__name__, text
    return None


CASES = [
    (lambda t: (t.tensor([1., 2, 3]), t.tensor([1., 2.5, 3])), {}),
    (lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 4, 3])), {}),
    (lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 5, 3])), {}),  # relative difference in float32, as torch
    (lambda t: (1.0, 1.5), {}),
    (lambda t: (t.tensor([1.]), 1.0), {}),
    (lambda t: (t.tensor([1.]), np.array([1.])), {}),
    (lambda t: (np.array([1., 2.]), np.array([1., 2.5])), {}),
    (lambda t: ([t.tensor(1.), 2], [t.tensor(1.5), 2]), {}),
    (lambda t: ({"a": t.tensor([1., 2])}, {"a": t.tensor([1., 2.1])}), {}),
    (lambda t: ({"a": 1}, {"b": 1}), {}),
    (lambda t: (t.tensor([1.]), t.tensor([1.], dtype=t.float64)), {}),
    (lambda t: (t.tensor([1.]), t.tensor([1.], dtype=t.float64)), {"check_dtype": False}),
    (lambda t: (t.tensor([1., 2]), t.tensor([1.])), {}),
    (lambda t: (t.tensor([1.]), t.tensor([1.1])), {"rtol": 0.2}),
    (lambda t: (t.tensor([1.]), t.tensor([1.1])), {"rtol": 0.2, "atol": 0.0}),
    (lambda t: (t.tensor([math.nan]), t.tensor([math.nan])), {}),
    (lambda t: (t.tensor([math.nan]), t.tensor([math.nan])), {"equal_nan": True}),
    (lambda t: (t.tensor([1.]), t.tensor([2.])), {"msg": "custom"}),
    (lambda t: (t.tensor([1.]), t.tensor([2.])), {"msg": lambda m: m + "\nFooter"}),
    (lambda t: (None, 1), {}),
    (lambda t: (True, False), {}),
    (lambda t: ("a", "a"), {}),
    (lambda t: (t.tensor([[1., 2], [3, 4]]), t.tensor([[1., 2], [3, 0]])), {}),
    (lambda t: (t.tensor(1.), t.tensor(0.)), {}),
    (lambda t: (t.ones(2, 3), t.ones(3, 2).t()), {"check_stride": True}),
    (lambda t: ([1, 2], [1, 2, 3]), {}),
    (lambda t: (t.tensor([True]), t.tensor([False])), {}),
    (lambda t: (t.tensor([1 + 1j]), t.tensor([1 + 2j])), {}),
    (lambda t: (t.tensor([1., math.inf]), t.tensor([1., math.inf])), {}),
    (lambda t: (t.tensor([1., math.inf]), t.tensor([1., -math.inf])), {}),
    (lambda t: (1, 1.0), {}),
    (lambda t: (1, 1.0), {"check_dtype": False}),
    (lambda t: (t.tensor([1.], dtype=t.float16), t.tensor([1.001], dtype=t.float16)), {}),
    (lambda t: (t.tensor([1.], dtype=t.float16), t.tensor([1.01], dtype=t.float16)), {}),
    (lambda t: (t.tensor([1., 2.], dtype=t.bfloat16), t.tensor([1.01, 2.5], dtype=t.bfloat16)), {}),
    (lambda t: (t.tensor([1., 2]), t.tensor([1., 2])), {"rtol": 0., "atol": 0.}),
    (lambda t: (t.nn.Parameter(t.ones(2)), t.ones(2)), {}),
    (lambda t: (t.nn.Parameter(t.ones(2)), t.ones(2)), {"allow_subclasses": False}),
    (lambda t: (np.float32(1.0), 1.0), {}),
    (lambda t: (np.float32(1.0), np.float32(1.1)), {}),
    (lambda t: (t.tensor([1, 2], dtype=t.uint8), t.tensor([3, 0], dtype=t.uint8)), {}),
    (lambda t: (t.tensor([1., 2.]), t.tensor([1., 2.]).requires_grad_()), {}),
    (lambda t: ((t.zeros(2), t.ones(3)), [t.zeros(2), t.zeros(3)]), {}),
    (lambda t: (t.arange(12.).reshape(3, 4), t.arange(12.).reshape(3, 4) * 1.5), {}),
    (lambda t: ([[t.tensor([1.])]], [[t.tensor([1.5])]]), {}),
]


@pytest.mark.parametrize("build, options", CASES, ids=[str(i) for i in range(len(CASES))])
def test_assert_close_matches_torch(build, options):
    assert _outcome(scriptc, build, **options) == _outcome(torch, build, **options)


def test_assert_close_random_float_tensors_match_torch_verdict_and_message():
    rng = np.random.default_rng(0)
    for _ in range(20):
        shape = tuple(rng.integers(1, 4, size=rng.integers(1, 4)))
        a = rng.standard_normal(shape).astype(np.float32)
        b = a + rng.choice([0.0, 1e-7, 1e-3], size=shape).astype(np.float32)

        def build(lib, a=a, b=b):
            return lib.from_numpy(a.copy()), lib.from_numpy(b.copy())
        assert _outcome(scriptc, build) == _outcome(torch, build)


def test_assert_close_passes_for_equal_model_outputs():
    model = scriptc.nn.Linear(3, 2)
    x = scriptc.randn(4, 3)
    assert_close(model(x), model(x).detach().clone())
    assert_close(model.state_dict(), {k: v.clone() for k, v in model.state_dict().items()})


def test_assert_allclose_is_deprecated_and_lenient_on_dtype():
    with pytest.warns(FutureWarning, match="assert_close"):
        assert_allclose(scriptc.tensor([1.0]), [1.0])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="not close"):
        assert_allclose(scriptc.tensor([1.0]), scriptc.tensor([2.0], dtype=scriptc.float64))


@pytest.mark.parametrize("dtype, low, high", [
    ("bool", 0, 1), ("uint8", 0, 9), ("int8", -9, 9), ("int32", -9, 9), ("int64", -9, 9),
    ("float16", -9, 9), ("bfloat16", -9, 9), ("float32", -9, 9), ("float64", -9, 9),
])
def test_make_tensor_default_ranges(dtype, low, high):
    scriptc.manual_seed(0)
    t = make_tensor(40, 50, dtype=getattr(scriptc, dtype), device="cpu")
    assert t.shape == (40, 50) and t.dtype is getattr(scriptc, dtype)
    values = t.float()
    assert low <= values.min().item() and values.max().item() <= high
    assert values.max().item() - values.min().item() > (high - low) / 2  # spread over the range


def test_make_tensor_options():
    scriptc.manual_seed(1)
    t = make_tensor((3, 4), dtype=scriptc.float32, device="cpu", low=-1, high=1, requires_grad=True)
    assert t.requires_grad and t.is_leaf and -1 <= t.min().item() and t.max().item() < 1
    strided = make_tensor(3, 4, dtype=scriptc.float64, device="cpu", noncontiguous=True)
    assert strided.shape == (3, 4) and not strided.is_contiguous()
    assert (make_tensor(100, dtype=scriptc.int64, device="cpu", low=0, high=2, exclude_zero=True) == 1).all()
    tiny = make_tensor(100, dtype=scriptc.float32, device="cpu", low=0, high=1e-45, exclude_zero=True)
    assert (tiny > 0).all()
    z = make_tensor(6, dtype=scriptc.complex64, device="cpu", low=2, high=3)
    assert ((z.real >= 2) & (z.real < 3) & (z.imag >= 2) & (z.imag < 3)).all()
    wide = make_tensor(8, dtype=scriptc.float32, device="cpu", low=-1e39, high=1e39)
    assert scriptc.isfinite(wide).all()
    assert make_tensor(2, 3, dtype=scriptc.float32, device="cpu", memory_format=scriptc.contiguous_format).is_contiguous()


@pytest.mark.parametrize("kwargs", [
    {"low": 3, "high": 1}, {"low": math.nan}, {"requires_grad": True, "dtype": "int32"},
    {"low": 300, "high": 400, "dtype": "uint8"}, {"noncontiguous": True, "memory_format": "contiguous_format"},
])
def test_make_tensor_errors_match_torch(kwargs):
    def run(lib):
        options = {k: getattr(lib, v) if k in ("dtype", "memory_format") else v for k, v in kwargs.items()}
        options.setdefault("dtype", lib.float32)
        with pytest.raises(Exception) as info:
            lib.testing.make_tensor(2, device="cpu", **options)
        return info.type, str(info.value)
    assert run(scriptc) == run(torch)
