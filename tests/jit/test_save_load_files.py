"""jit.save / jit.load with file objects, as torch.jit.save(m, io.BytesIO()) is used."""
import io

import numpy as np
import pytest

import scriptc as torch


def test_save_to_a_bytes_buffer_loads_back_the_same_results(tmp_path):
    module = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    x = torch.randn(5, 4)
    np.testing.assert_allclose(loaded(x).detach().numpy(), module(x).detach().numpy(), rtol=1e-6)

    # the bytes are the archive a path would hold
    path = tmp_path / "model.sc"
    torch.jit.save(module, str(path))
    assert buffer.getvalue() == path.read_bytes()


def test_save_to_and_load_from_open_files(tmp_path):
    function = torch.jit.script(lambda_free_add)
    path = tmp_path / "function.sc"
    with open(path, "wb") as f:
        torch.jit.save(function, f)
    with open(path, "rb") as f:
        loaded = torch.jit.load(f)
    x = torch.randn(3)
    np.testing.assert_allclose(loaded(x, x).numpy(), (x + x * 2).numpy())


def lambda_free_add(a, b):
    return a + b * 2


def test_a_loaded_module_in_training_mode_updates_its_batch_norm_statistics_as_eager():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(model, (torch.rand(5, 3),)), buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    eager = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    eager.load_state_dict(loaded.state_dict())
    for batch in (6, 2):
        x = torch.rand(batch, 3)
        np.testing.assert_allclose(loaded(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(loaded.state_dict()[f"1.{name}"].numpy(), getattr(eager[1], name).numpy(),
                                       rtol=1e-6)


def test_backward_through_a_loaded_module_reaches_its_inputs_as_through_the_scripted_one():
    module = torch.jit.script(torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3),
                                                  torch.nn.ReLU()).eval())
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    x = torch.randn(2, 2, 5, 5, requires_grad=True)
    grads = []
    for model in (module, loaded):
        out = model(x)
        (out * out).sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy().copy()))
        x.grad = None
    for expected, actual in zip(*grads):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        assert loaded(x).grad_fn is None


class _ParametersOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.arange(3.0))
        self.register_buffer("steps", torch.zeros(2))


def test_a_module_without_methods_saves_and_loads_its_state():
    """torch saves a scripted module that has no forward (a holder of parameters); calling the loaded
    one is an AttributeError, as torch's (upstream test_save_load.test_save_load_params_buffers_submodules)."""
    buffer = io.BytesIO(torch.jit.script(_ParametersOnly()).save_to_buffer())
    loaded = torch.jit.load(buffer)
    state = loaded.state_dict()
    assert sorted(state) == ["steps", "weight"]
    np.testing.assert_array_equal(state["weight"].numpy(), [0.0, 1.0, 2.0])
    with pytest.raises(AttributeError, match="forward"):
        loaded(torch.ones(3))


def test_save_to_buffer_and_the_qualified_type_name():
    scripted = torch.jit.script(_ParametersOnly())
    assert scripted._c.qualified_name == "__torch__.tests.jit.test_save_load_files._ParametersOnly"
    extra = {"note": ""}
    torch.jit.load(io.BytesIO(scripted.save_to_buffer(_extra_files={"note": "hi"})), _extra_files=extra)
    assert extra == {"note": b"hi"}


def test_saving_into_a_missing_directory_is_torchs_error(tmp_path):
    scripted = torch.jit.script(_ParametersOnly())
    target = tmp_path / "missing" / "m.pt"
    for save in (lambda: scripted.save(str(target)), lambda: torch.jit.save(scripted, target)):
        with pytest.raises(RuntimeError, match=f"Parent directory {tmp_path / 'missing'} does not exist."):
            save()


def _with_local_classes():
    from enum import Enum
    from typing import NamedTuple

    class Pair(NamedTuple):
        a: int
        b: str

    class Color(Enum):
        RED = 1
        GREEN = 2

    class Model(torch.nn.Module):
        def forward(self, x: int):
            c = Color.RED if x > 0 else Color.GREEN
            return c.value, c.name, Pair(a=x, b=c.name).a

    return Model()


def test_named_tuples_and_enums_defined_in_a_function_save_and_load():
    """Their names hold `<locals>` (upstream test_save_load.test_many_collisions: jit.load refused the
    archive)."""
    scripted = torch.jit.script(_with_local_classes())
    loaded = torch.jit.load(io.BytesIO(scripted.save_to_buffer()))
    for x in (3, -1):
        assert loaded(x) == scripted(x)
    assert loaded(-1) == (2, "GREEN", -1)


def _extra_files_read(engine):
    buffer = io.BytesIO()
    engine.jit.save(engine.jit.script(engine.nn.ReLU()), buffer, _extra_files={"stored": "x"})
    asked = {"stored": "", "missing": "keep"}
    engine.jit.load(io.BytesIO(buffer.getvalue()), _extra_files=asked)
    none_asked: dict = {}
    engine.jit.load(io.BytesIO(buffer.getvalue()), _extra_files=none_asked)
    return asked, none_asked


def test_load_fills_just_the_extra_files_asked_for_as_torch_does():
    real_torch = pytest.importorskip("torch")
    assert _extra_files_read(torch) == _extra_files_read(real_torch) == ({"stored": b"x", "missing": b""}, {})
