"""Scripted modules saved and read back: an OrderedDict result, jit.save/jit.load through a file object
with extra files, the stored state a loaded module exposes as attributes, and its constants."""

from __future__ import annotations

import collections
from collections import OrderedDict
from typing import Dict

import numpy as np
import pytest

import scriptc as torch
import scriptc.nn as nn
from scriptc.runtime import load as runtime_load


class _FeatureGetter(nn.Module):
    """torchvision's IntermediateLayerGetter: an OrderedDict of named feature maps."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({"conv": nn.Conv2d(3, 4, 3), "pool": nn.MaxPool2d(2)})

    def forward(self, x) -> Dict[str, torch.Tensor]:
        out = collections.OrderedDict()
        for name, module in self.layers.items():
            x = module(x)
            out[name] = x
        result = OrderedDict([("first", out["conv"])])
        result["second"] = out["pool"]
        return result


def test_ordered_dict_scripts_as_a_dict(tmp_path):
    model = _FeatureGetter().eval()
    x = torch.randn(1, 3, 8, 8)
    scripted = torch.jit.script(model)
    scripted.save(tmp_path / "m.sc")
    expected = model(x)
    for got in (scripted(x), runtime_load(tmp_path / "m.sc")(x.numpy())):
        assert list(got) == ["first", "second"]
        for key in got:
            np.testing.assert_allclose(np.asarray(got[key]), expected[key].detach().numpy(), rtol=1e-6)


def test_save_and_load_through_a_file_object_as_torch_jit_does():
    import io

    class Tagged(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.tag = "fc"

        def forward(self, x, suffix: str):
            return self.fc(x), self.tag + suffix

    scripted = torch.jit.script(Tagged())
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer, _extra_files={"note.txt": "hi"})
    buffer.seek(0)
    extra = {"note.txt": ""}
    loaded = torch.jit.load(buffer, _extra_files=extra)
    x = torch.randn(4, 3)
    out, text = loaded(x, "!")
    np.testing.assert_allclose(out.detach().numpy(), scripted(x, "!")[0].detach().numpy(), rtol=1e-6)
    assert text == "fc!" and extra["note.txt"] == b"hi"


class _NotCalledSelf(nn.Module):
    def __init__(this):
        super().__init__()
        this.fc = nn.Linear(2, 2)
        this.names = ["a", "b"]
        this.register_buffer("offset", torch.ones(2))
        this.calls = 0

    def forward(this, x):
        this.calls += 1  # an attribute assigned through a first parameter not named self
        return this.fc(x) + this.offset + len(this.names)


def test_a_method_may_call_its_module_by_any_name_and_loaded_archives_expose_stored_state(tmp_path):
    module = _NotCalledSelf()
    scripted = torch.jit.script(module)
    x = torch.randn(3, 2)
    np.testing.assert_allclose(scripted(x).detach().numpy(), module(x).detach().numpy(), rtol=1e-6)
    assert module.calls == 1 and scripted.calls == 1  # (each has its own state, as in torch)
    torch.jit.save(scripted, tmp_path / "m.sc")
    loaded = torch.jit.load(tmp_path / "m.sc")
    np.testing.assert_array_equal(loaded.fc.weight.detach().numpy(), module.fc.weight.detach().numpy())
    np.testing.assert_array_equal(loaded.offset.numpy(), np.ones(2, np.float32))
    assert loaded.names == ["a", "b"] and loaded.training is True and loaded.fc.training is True
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        loaded.fc.missing  # noqa: B018


class _WithConstant(nn.Module):
    __constants__ = ["w"]

    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        return x, self.w


@pytest.mark.parametrize("constant", [2, 1.0, None, True, "str", (2, 3), [5.9, 7.3]])
def test_a_loaded_module_keeps_its_constants_as_attributes(constant, tmp_path):
    scripted = torch.jit.script(_WithConstant(constant))
    torch.jit.save(scripted, tmp_path / "c.sc")
    loaded = torch.jit.load(tmp_path / "c.sc")
    x = torch.ones(2)
    assert loaded(x)[1] == scripted(x)[1] == constant
    assert loaded.w == constant
