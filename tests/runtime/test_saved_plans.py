"""optimize_for_inference results save (`.save()`, jit.save) with their plan - the optimized graph,
its frozen weights stored as tensors - and load (runtime.load, jit.load) to the same plan."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import scriptc as torch
import scriptc.runtime as rt
from scriptc.errors import ArchiveError


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        return torch.softmax(self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(h, 1), 1)), -1)


def _fusion_groups(graph) -> list[str]:
    return [n.attrs["kind"] for n in graph.nodes() if n.op == "prim::FusionGroup"]


@pytest.mark.parametrize("how", ["trace", "script"])
def test_an_optimized_module_saves_its_plan_and_loads_it(tmp_path, how):
    torch.manual_seed(0)
    model = SmallCNN().eval()
    x = torch.randn(2, 3, 8, 8)
    compiled = torch.jit.trace(model, x) if how == "trace" else torch.jit.script(model)
    fast = torch.jit.optimize_for_inference(compiled)
    path = tmp_path / "cnn.sc"
    fast.save(path)
    with zipfile.ZipFile(path) as zf:
        text = zf.read("graphs/forward.ir").decode()
    assert "prim::FusionGroup" in text and "batch_norm" not in text  # the plan, conv and bn folded
    assert "array(" not in text  # frozen weights live in weights.safetensors, not in the IR text
    loaded = rt.load(path)
    assert _fusion_groups(loaded.graphs["forward"]) == _fusion_groups(fast.graph)
    for batch in (1, 2, 5):
        x = torch.randn(batch, 3, 8, 8)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(loaded(x.numpy()), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(torch.jit.load(path)(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    # The module's own weights are saved beside the plan's constants (which state_dict does not list).
    assert sorted(torch.jit.load(path).state_dict()) == sorted(model.state_dict())


def test_an_optimized_function_with_example_inputs_keeps_both_plans(tmp_path):
    def fn(x, alpha: float):
        return torch.tanh(x) * alpha + 1.0
    fast = torch.jit.optimize_for_inference(torch.jit.script(fn, example_inputs=[(torch.randn(3, 5), 2.0)]))
    torch.jit.save(fast, tmp_path / "fn.sc")
    loaded = rt.load(tmp_path / "fn.sc")
    assert loaded.compiled_kernels == 1  # the specialized plan's kernel, compiled (or read) at load
    for shape in [(4, 5), (2, 3, 5)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(loaded(x, 0.5), np.tanh(x) * 0.5 + 1.0, rtol=1e-6)


@pytest.mark.invalid_graphs  # (the broken archives' graphs, parsed before they are refused)
def test_a_stored_constant_that_disagrees_with_its_type_is_an_archive_error(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(2, 4)))
    path = tmp_path / "m.sc"
    fast.save(path)
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    text = members["graphs/forward.ir"].decode()
    for bad, message in [(text.replace('weight="constants/graphs/forward/0"', 'weight="constants/nowhere"'),
                          "does not hold"),
                         (text.replace("Tensor(float32, [4, 3])", "Tensor(float32, [3, 4])"), "types it")]:
        assert bad != text
        broken = tmp_path / "broken.sc"
        with zipfile.ZipFile(broken, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, bad.encode() if name == "graphs/forward.ir" else data)
        with pytest.raises(ArchiveError, match=message):
            rt.load(broken)
