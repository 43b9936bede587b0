"""Process-wide settings against torch: default dtype/device, deterministic algorithms, matmul precision,
print options, torch.version, torch.distributed and the CUDA seeding calls of a build without a GPU."""

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.fixture
def restore_settings():
    yield
    for lib in (scriptc, torch):
        lib.set_default_dtype(lib.float32)
        lib.use_deterministic_algorithms(False)
        lib.set_float32_matmul_precision("highest")
        lib.set_printoptions(profile="default")
        lib.set_default_device(None)


def _dtype_name(d) -> str:
    return str(d).split(".")[-1]


DEFAULT_DTYPE_CASES = [
    lambda t: t.tensor(1.5), lambda t: t.tensor([1.0, 2]), lambda t: t.tensor([1, 2]), lambda t: t.tensor(1j),
    lambda t: t.tensor([1, 2]) + 2.5, lambda t: t.tensor([1, 2]).sqrt(), lambda t: t.tensor([1, 2]).float(),
    lambda t: t.zeros(2), lambda t: t.ones(2, 3), lambda t: t.empty(2), lambda t: t.full((2,), 1.5),
    lambda t: t.rand(2), lambda t: t.randn(2), lambda t: t.arange(0.0, 2), lambda t: t.arange(3),
    lambda t: t.linspace(0, 1, 3), lambda t: t.eye(2), lambda t: t.Tensor(2), lambda t: t.hann_window(4),
    lambda t: t.nn.Linear(2, 2).weight, lambda t: t.nn.BatchNorm1d(2).running_mean,
    lambda t: t.nn.Parameter(), lambda t: t.tensor([1.0], dtype=t.float32) * 2.0,
    lambda t: t.tensor([1.0, 2]).mean(), lambda t: t.scalar_tensor(1), lambda t: t.asarray([1.5]),
    lambda t: t.nn.Buffer(), lambda t: t.tensor([1, 2]) / 2, lambda t: t.tensor([1, 2]).div(t.tensor([2, 4])),
    lambda t: t.true_divide(t.tensor([3]), 2), lambda t: t.tensor([1, 2]).logsumexp(0), lambda t: t.tensor([-1, 2]).angle(),
]


@pytest.mark.parametrize("default", ["float64", "float32", "float16"])
@pytest.mark.parametrize("build", DEFAULT_DTYPE_CASES, ids=[str(i) for i in range(len(DEFAULT_DTYPE_CASES))])
def test_set_default_dtype_matches_torch(restore_settings, default, build):
    results = []
    for lib in (scriptc, torch):
        lib.set_default_dtype(getattr(lib, default))
        assert _dtype_name(lib.get_default_dtype()) == default
        if default == "float16" and lib is torch:
            warnings.simplefilter("ignore", UserWarning)  # torch's complex32 warning
        results.append(_dtype_name(build(lib).dtype))
    if default == "float16" and results[1] == "complex32":
        pytest.skip("scriptc has no complex32: complex values stay complex64 under a float16 default")
    assert results[0] == results[1]


@pytest.mark.parametrize("transform", ["fft", "rfft", "ifft"])
def test_float64_default_reaches_integer_ffts(restore_settings, transform):
    results = []
    for lib in (scriptc, torch):
        lib.set_default_dtype(lib.float64)
        out = getattr(lib.fft, transform)(lib.tensor([1, 2, 4]))
        results.append((_dtype_name(out.dtype), np.array(out.tolist())))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-14, atol=1e-15)


def test_default_dtype_reaches_printing_and_promotion(restore_settings):
    scriptc.set_default_dtype(scriptc.float64)
    torch.set_default_dtype(torch.float64)
    for build in (lambda t: t.tensor([1.0, 2.0]), lambda t: t.tensor([1.0], dtype=t.float32),
                  lambda t: t.tensor([1 + 2j])):
        assert repr(build(scriptc)).replace("scriptc.", "torch.") == repr(build(torch))
    assert scriptc.tensor([0.1]).item() == 0.1  # a float64 default keeps the double
    scriptc.set_default_dtype(scriptc.float32)
    assert scriptc.tensor([1, 2]).sqrt().dtype is scriptc.float32  # the promotion cache forgets float64


@pytest.mark.parametrize("value", ["int32", "complex64", "'float64'", "None"])
def test_set_default_dtype_errors_match_torch(restore_settings, value):
    def run(lib):
        with pytest.raises(Exception) as info:
            lib.set_default_dtype(eval(value, {"t": lib}) if value[0] in "'N" else getattr(lib, value))
        return info.type, str(info.value)
    assert run(scriptc) == run(torch)
    assert scriptc.get_default_dtype() is scriptc.float32


def test_bfloat16_default_has_no_complex_dtype(restore_settings):
    for lib in (scriptc, torch):
        lib.set_default_dtype(lib.bfloat16)
        assert _dtype_name(lib.tensor([1.5]).dtype) == "bfloat16" and _dtype_name(lib.zeros(1).dtype) == "bfloat16"
        with pytest.raises(RuntimeError, match="invalid default scalar type for complex"):
            lib.tensor(1j)


@pytest.mark.parametrize("build", [lambda t: t.tensor([1, 4]).sqrt(), lambda t: t.tensor([1, 3]) / 2,
                                   lambda t: t.tensor([2, 5]).exp(), lambda t: t.tensor([1, 2]).div(t.tensor([4, 3]))],
                         ids=["sqrt", "div_scalar", "exp", "div"])
def test_bfloat16_default_takes_integer_results(restore_settings, build):
    results = []
    for lib in (scriptc, torch):
        lib.set_default_dtype(lib.bfloat16)
        out = build(lib)
        results.append((_dtype_name(out.dtype), out.float().tolist()))
    assert results[0] == results[1]


def test_default_device(restore_settings):
    for device in ("cpu", None, scriptc.device("cpu")):
        scriptc.set_default_device(device)
        assert scriptc.get_default_device() == scriptc.device("cpu")
    assert str(scriptc.get_default_device()) == str(torch.get_default_device())
    if not scriptc.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            scriptc.set_default_device("cuda")
        assert scriptc.get_default_device() == scriptc.device("cpu")


def test_device_as_context_manager(restore_settings):
    for lib in (scriptc, torch):
        outer = lib.device("cpu")
        with outer as entered:
            assert entered is outer
            with lib.device("cpu"):
                assert lib.zeros(2).device == lib.device("cpu")
            assert lib.get_default_device() == lib.device("cpu")
        assert lib.get_default_device() == lib.device("cpu")
    with pytest.raises(ValueError, match="inside"):
        with scriptc.device("cpu"):
            raise ValueError("raised inside")
    assert scriptc.get_default_device() == scriptc.device("cpu")
    if not scriptc.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            with scriptc.device("cuda"):
                pass
        assert scriptc.get_default_device() == scriptc.device("cpu")


def test_deterministic_algorithms_match_torch(restore_settings):
    for lib in (scriptc, torch):
        assert lib.are_deterministic_algorithms_enabled() is False and lib.get_deterministic_debug_mode() == 0
    steps = [("use", (True,), {}), ("use", (True,), {"warn_only": True}), ("mode", ("error",), {}),
             ("mode", (1,), {}), ("mode", ("default",), {}), ("use", (False,), {})]
    for kind, args, kwargs in steps:
        states = []
        for lib in (scriptc, torch):
            call = lib.use_deterministic_algorithms if kind == "use" else lib.set_deterministic_debug_mode
            call(*args, **kwargs)
            states.append((lib.are_deterministic_algorithms_enabled(),
                           lib.is_deterministic_algorithms_warn_only_enabled(), lib.get_deterministic_debug_mode()))
        assert states[0] == states[1]


EMPTY_CASES = [lambda t: t.empty(3), lambda t: t.empty(2, dtype=t.bool), lambda t: t.empty(2, dtype=t.uint8),
               lambda t: t.empty(2, dtype=t.int64), lambda t: t.empty_like(t.ones(2, dtype=t.float16)),
               lambda t: t.ones(2).new_empty(3), lambda t: t.empty(2, dtype=t.complex64)]


@pytest.mark.parametrize("build", EMPTY_CASES, ids=[str(i) for i in range(len(EMPTY_CASES))])
def test_deterministic_mode_fills_uninitialized_memory_as_torch(restore_settings, build):
    values = []
    for lib in (scriptc, torch):
        lib.use_deterministic_algorithms(True)
        values.append(build(lib).numpy())
    np.testing.assert_array_equal(values[0], values[1])


@pytest.mark.parametrize("call", [
    lambda t: t.use_deterministic_algorithms("x"), lambda t: t.use_deterministic_algorithms(True, warn_only=1),
    lambda t: t.set_deterministic_debug_mode("bad"), lambda t: t.set_deterministic_debug_mode(5),
    lambda t: t.set_deterministic_debug_mode(1.5), lambda t: t.set_float32_matmul_precision(3),
])
def test_setting_errors_match_torch(restore_settings, call):
    def run(lib):
        with pytest.raises(Exception) as info:
            call(lib)
        return info.type, str(info.value)
    assert run(scriptc) == run(torch)


def test_float32_matmul_precision_matches_torch(restore_settings):
    for value in ("high", "medium", "highest"):
        for lib in (scriptc, torch):
            lib.set_float32_matmul_precision(value)
        assert scriptc.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == value
    with pytest.warns(UserWarning, match="no effect"):
        scriptc.set_float32_matmul_precision("bad")
    assert scriptc.get_float32_matmul_precision() == "highest"


PRINT_CASES = [
    ({"precision": 2}, lambda t: t.tensor([1.12345, -2.5])),
    ({"threshold": 5}, lambda t: t.arange(10)),
    ({"threshold": 5, "edgeitems": 1}, lambda t: t.arange(20.0).reshape(4, 5) / 3),
    ({"sci_mode": True}, lambda t: t.tensor([1.5, 2.0])),
    ({"sci_mode": True}, lambda t: t.tensor([1.0, 2.0])),
    ({"sci_mode": False}, lambda t: t.tensor([1e-8, 1.0])),
    ({"linewidth": 30}, lambda t: t.arange(12.0) / 7),
    ({"profile": "short"}, lambda t: t.arange(2000.0) / 3),
    ({"profile": "full"}, lambda t: t.arange(1500)),
    ({"profile": "full", "precision": 6}, lambda t: t.tensor([1 / 3])),
    ({"profile": "unknown"}, lambda t: t.tensor([1 / 3])),
]


@pytest.mark.parametrize("options, build", PRINT_CASES, ids=[str(i) for i in range(len(PRINT_CASES))])
def test_set_printoptions_matches_torch(restore_settings, options, build):
    texts = []
    for lib in (scriptc, torch):
        lib.set_printoptions(**options)
        texts.append(repr(build(lib)))
    assert texts[0] == texts[1]


def test_version_matches_a_cpu_build():
    assert scriptc.version.__version__ == scriptc.__version__
    assert scriptc.version.cuda is None and torch.version.cuda is None
    assert scriptc.version.debug is False and scriptc.version.hip is None


def test_distributed_reports_unavailable():
    import scriptc.distributed as dist
    assert dist.is_available() is False
    with pytest.raises(AttributeError, match="init_process_group"):
        dist.init_process_group()


def test_cuda_seeding_is_deferred_without_a_gpu():
    for lib in (scriptc, torch):
        assert lib.cuda.manual_seed_all(3) is None and lib.cuda.manual_seed(2**70) is None
        assert lib.cuda.seed() is None and lib.cuda.seed_all() is None
    for lib in (scriptc, torch):
        with pytest.raises(ValueError, match="invalid literal"):
            lib.cuda.manual_seed("a")
    scriptc.manual_seed(0)
    first = scriptc.rand(3)
    scriptc.manual_seed(0)
    scriptc.cuda.manual_seed_all(1)  # GPU seeds leave the CPU generator alone
    assert scriptc.equal(scriptc.rand(3), first)
    if not scriptc.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            scriptc.cuda.initial_seed()


@pytest.mark.parametrize("value", ["DoubleTensor", "torch.DoubleTensor", "torch.FloatTensor", "torch.cuda.FloatTensor",
                                   "torch.LongTensor", "no_such_module_here", "float64", 3])
def test_set_default_tensor_type_matches_torch(value):
    def run(lib):
        before = lib.get_default_dtype()
        arg = getattr(lib, value) if value in ("DoubleTensor", "float64") else value
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type(arg)
            return str(lib.get_default_dtype()), str(lib.ones(1).dtype)
        except Exception as error:  # noqa: BLE001  (the error torch raises is the result compared)
            return type(error).__name__, str(error)
        finally:
            lib.set_default_dtype(before)
    assert run(scriptc) == run(torch)


def test_warn_always_repeats_the_deprecation_warning_and_flush_denormal_is_refused():
    assert not scriptc.is_warn_always_enabled()
    scriptc.set_warn_always(True)
    try:
        assert scriptc.is_warn_always_enabled()
        for _ in range(2):
            with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
                scriptc.set_default_tensor_type(scriptc.FloatTensor)
    finally:
        scriptc.set_warn_always(False)
    assert scriptc.set_flush_denormal(True) is False and scriptc.set_flush_denormal(False) is False


def test_allow_tf32_is_the_matmul_precision_as_torch(restore_settings):
    """(torch gives the same in a fresh process; its later calls refuse to mix the two APIs)"""
    seen = [scriptc.backends.cuda.matmul.allow_tf32]
    for precision in ("medium", "highest", "high"):
        scriptc.set_float32_matmul_precision(precision)
        seen.append(scriptc.backends.cuda.matmul.allow_tf32)
    for allowed in (False, True):
        scriptc.backends.cuda.matmul.allow_tf32 = allowed
        seen.append(scriptc.get_float32_matmul_precision())
    scriptc.backends.cuda.matmul.allow_tf32 = False
    assert seen == [False, True, False, True, "highest", "high"]
