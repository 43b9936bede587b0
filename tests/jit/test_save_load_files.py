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
