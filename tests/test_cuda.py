"""The CUDA device API where CUDA cannot be used (no cupy, or no GPU): every entry point says why."""

import sys
import types

import numpy as np
import pytest

import scriptc as torch
from scriptc import cuda

pytestmark = pytest.mark.skipif(cuda.is_available(), reason="a CUDA GPU is present")

NOT_AVAILABLE = "CUDA is not available"


def test_availability_and_count():
    assert cuda.is_available() is False and cuda.device_count() == 0
    assert cuda.unavailable_reason()


@pytest.mark.parametrize("call", [
    lambda: torch.ones(2).cuda(), lambda: torch.ones(2).to("cuda"), lambda: torch.ones(2).to(torch.device("cuda", 0)),
    lambda: torch.ones(2).to(device="cuda:1"), lambda: torch.ones(2).pin_memory(),
    lambda: torch.zeros(2, device="cuda"), lambda: torch.randn(2, device="cuda:0"), lambda: torch.ones(2, device=0),
    lambda: torch.arange(3, device="cuda"), lambda: torch.empty(3, pin_memory=True),
    lambda: torch.zeros_like(torch.ones(2), device="cuda"), lambda: torch.ones(2).new_zeros(3, device="cuda"),
    lambda: torch.ones(2).new_full((2,), 1.0, device="cuda"), lambda: torch.tensor([1.0], device="cuda"),
    lambda: torch.as_tensor([1.0], device="cuda"), lambda: torch.nn.Linear(2, 2).to("cuda"),
    lambda: torch.nn.Linear(2, 2).cuda(),
], ids=lambda _: "")
def test_tensors_never_land_on_a_device_that_is_not_there(call):
    with pytest.raises(RuntimeError, match=NOT_AVAILABLE):
        call()


def test_cpu_stays_available_through_the_same_arguments():
    x = torch.zeros(2, device="cpu")
    assert x.device == torch.device("cpu") and x.to("cpu") is x and x.cpu() is x
    assert torch.ones(2, device=torch.device("cpu")).new_zeros(3, device="cpu").tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("name, args", [
    ("current_device", ()), ("synchronize", ()), ("current_stream", ()), ("stream", (None,)),
    ("memory_allocated", ()), ("max_memory_allocated", ()), ("memory_reserved", ()), ("max_memory_reserved", ()),
    ("memory_stats", ()), ("empty_cache", ()), ("reset_peak_memory_stats", ()), ("Stream", ()), ("Event", ()),
])
def test_device_api_entry_points_raise_why(name, args):
    with pytest.raises(RuntimeError, match=NOT_AVAILABLE):
        getattr(cuda, name)(*args)


def test_device_context_raises_on_entry():
    with pytest.raises(RuntimeError, match=NOT_AVAILABLE):
        with cuda.device(0):
            pass


def test_runtime_load_on_cuda_says_why(tmp_path):
    path = tmp_path / "m.sc"
    torch.jit.trace(lambda x: torch.relu(x) + 1, torch.ones(3)).save(path)
    with pytest.raises(RuntimeError, match=NOT_AVAILABLE):
        torch.runtime.load(path, device="cuda")
    assert np.array_equal(torch.runtime.load(path)(np.zeros(3, np.float32)), np.ones(3, np.float32))


def test_reason_names_the_missing_driver_when_cupy_is_installed(monkeypatch):
    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver")
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_driver)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert "no CUDA driver or GPU" in cuda._probe() and "cudaErrorInsufficientDriver" in cuda._probe()
    fake.cuda.runtime.getDeviceCount = lambda: 0
    assert cuda._probe() == "no CUDA GPU was found"
