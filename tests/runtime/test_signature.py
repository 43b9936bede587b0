"""Calls checked against the archive's signature before any kernel runs."""

from __future__ import annotations

import json
import zipfile
from typing import List, Optional

import numpy as np
import pytest

import scriptc as torch
from scriptc import ArchiveError, SignatureError
from scriptc.runtime import load

from ..models import MLP, ScriptFeatures


class _Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, mask: Optional[torch.Tensor] = None, scale: float = 1.0, steps: int = 1,
                extra: List[torch.Tensor] = []):  # noqa: B006  (TorchScript's way to type a list argument)
        y = self.fc(x) * scale * steps
        if mask is not None:
            y = y * mask
        for e in extra:
            y = y + e
        return y


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("signature") / "mlp.sc"
    torch.jit.trace(MLP(sizes=(12, 8, 4)).eval(), torch.randn(3, 12)).save(path)
    return load(path)


@pytest.fixture(scope="module")
def masked(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("signature") / "masked.sc"
    module = _Masked().eval()
    torch.jit.script(module).save(path)
    return module, load(path)


class _Ran:
    """Records whether the method's runner was called."""

    def __init__(self, model, monkeypatch):
        self.calls = 0
        runner = model.runners["forward"]
        real = runner.run

        def run(args):
            self.calls += 1
            return real(args)
        monkeypatch.setattr(runner, "run", run)


@pytest.mark.parametrize("value, got", [
    (np.ones((5, 12)), r"float64 array of shape \[5, 12\] \(dtype float64, not float32\)"),
    (np.ones((5, 12, 1), np.float32), r"float32 array of shape \[5, 12, 1\] \(3 dims, not 2\)"),
    (np.ones((5, 16), np.float32), r"float32 array of shape \[5, 16\] \(dim 1 is 16, not 12\)"),
    (np.ones(12, np.float32), r"float32 array of shape \[12\] \(1 dims, not 2\)"),
    ([[1.5] * 11], r"float32 array of shape \[1, 11\] \(dim 1 is 11, not 12\)"),
    ([[1, 2], [3]], "a list that is no array"),
    ([["a"] * 12], "a list of strings, not numbers"),
    (3.0, "a float"),
    (None, "a NoneType"),
])
def test_an_input_that_does_not_fit_is_refused_before_anything_runs(mlp, monkeypatch, value, got):
    ran = _Ran(mlp, monkeypatch)
    with pytest.raises(SignatureError, match=r"forward\(\): input 'x' expects Tensor\(float32, \[B, 12\]\), got " + got) \
            as info:
        mlp(value)
    assert (info.value.input, info.value.expected) == ("x", "Tensor(float32, [B, 12])")
    assert isinstance(info.value, RuntimeError) and ran.calls == 0


def test_arrays_lists_and_tensors_are_accepted_where_a_tensor_is(mlp):
    x = np.random.default_rng(0).standard_normal((3, 12)).astype(np.float32)
    expected = mlp(x)
    np.testing.assert_array_equal(mlp(x.tolist()), expected)  # Python floats: float32, as the input says
    np.testing.assert_array_equal(mlp(torch.from_numpy(x)), expected)
    torch_ = pytest.importorskip("torch")
    np.testing.assert_array_equal(mlp(torch_.from_numpy(x)), expected)
    np.testing.assert_array_equal(mlp(x=x), expected)
    np.testing.assert_array_equal(mlp(np.zeros((2, 12), np.int64).tolist()), mlp(np.zeros((2, 12), np.float32)))


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x: m(x, x), TypeError, r"forward\(\) takes 1 inputs, got 2"),
    (lambda m, x: m(), TypeError, r"forward\(\) is missing input\(s\) 'x'"),
    (lambda m, x: m(y=x), TypeError, r"unexpected input 'y' \(inputs: x\)"),
    (lambda m, x: m(x, x=x), TypeError, "two values for input 'x'"),
])
def test_wrong_counts_and_names_are_type_errors(mlp, call, error, message):
    with pytest.raises(error, match=message):
        call(mlp, np.ones((1, 12), np.float32))


def test_optional_inputs_may_be_none_or_left_out(masked):
    module, model = masked
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    mask = np.array([[1, 0, 1]], np.float32)
    with torch.no_grad():
        plain = module(torch.from_numpy(x)).numpy()
        masked_ = module(torch.from_numpy(x), torch.from_numpy(mask)).numpy()
    assert model.signature["forward"].parameters[1].optional
    np.testing.assert_allclose(model(x, None, 1.0, 1, []), plain, rtol=1e-6)
    np.testing.assert_allclose(model(x, mask, 1.0, 1, []), masked_, rtol=1e-6)
    np.testing.assert_allclose(model(x, scale=1.0, steps=1, extra=[]), plain, rtol=1e-6)
    np.testing.assert_allclose(model(x, mask=mask, scale=2, steps=1, extra=[mask]), 2 * masked_ + mask, rtol=1e-6)
    with pytest.raises(TypeError, match=r"missing input\(s\) 'x'"):
        model(mask=mask)


def test_inputs_left_out_take_the_scripted_methods_defaults(masked, tmp_path):
    module, model = masked
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    with torch.no_grad():
        want = module(torch.from_numpy(x), None, 3.0).numpy()
    assert [p.default for p in model.signature["forward"].parameters[1:]] == [None, 1.0, 1, []]
    np.testing.assert_allclose(model(x, scale=3.0), want, rtol=1e-6)
    path = tmp_path / "masked.sc"
    torch.jit.script(module).save(path)
    np.testing.assert_allclose(torch.jit.load(path)(torch.from_numpy(x), scale=3.0).detach().numpy(), want, rtol=1e-6)


def test_a_stored_default_its_input_does_not_take_is_an_archive_error(masked, tmp_path):
    module, _ = masked
    path = tmp_path / "masked.sc"
    torch.jit.script(module).save(path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(members["manifest.json"])
    next(e for e in manifest["methods"]["forward"]["inputs"] if e["name"] == "steps")["default"] = "many"
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ArchiveError, match="input 'steps' has a default that is no int"):
        load(path)


@pytest.mark.parametrize("inputs, name, got", [
    (dict(scale="2"), "scale", "got a str"),
    (dict(steps=1.5), "steps", "got a float"),
    (dict(steps=True), "steps", "got a bool"),
    (dict(extra=np.ones(3, np.float32)), "extra", "got float32 array"),
    (dict(extra=[np.ones(3, np.float32), "x"]), "extra", "got element 1: a str"),
    (dict(mask="all"), "mask", "got a str"),  # (a scripted `Tensor` takes any dtype and shape)
])
def test_scalars_lists_and_optionals_are_checked_by_type(masked, inputs, name, got):
    _, model = masked
    call = dict(scale=1.0, steps=1, extra=[])
    call.update(inputs)
    with pytest.raises(SignatureError, match=f"input '{name}' expects .*, {got}"):
        model(np.ones((2, 4), np.float32), **call)


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    path = tmp_path_factory.mktemp("signature") / "features.sc"
    torch.jit.script(ScriptFeatures().eval()).save(path)
    return load(path)


@pytest.mark.parametrize("k, got", [("a", "a str"), (None, "a NoneType"), ([1], "a list"), (True, "a bool")])
def test_a_union_input_takes_a_value_of_one_of_its_types(features, k, got):
    x = np.ones((3, 2), np.float32)
    assert features(x, 2, 1)[0].shape == features(x, 2.5, 1)[0].shape == features(x, np.int64(2), 1)[0].shape
    with pytest.raises(SignatureError, match=rf"input 'k' expects int\|float, got {got}"):
        features(x, k, 1)
