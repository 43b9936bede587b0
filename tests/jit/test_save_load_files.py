"""jit.save / jit.load with file objects, as torch.jit.save(m, io.BytesIO()) is used."""
import io

import numpy as np

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
