"""jit.script(..., example_inputs=...): a plan specialized for inputs like the examples, fused and
compiled, beside the generic plan that every other call runs (runtime/specialize.py)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import scriptc as torch
import scriptc.runtime as rt
from scriptc.errors import ArchiveError, ScriptError


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 5)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        if x.dim() == 3:  # folded in the specialized (rank 2) plan: a 3-D input must not take it
            h = h * 2.0
        return torch.softmax(self.l2(h), dim=-1)


def _groups(graph) -> int:
    return sum(1 for node in graph.block if node.op == "prim::FusionGroup")


def _check(run, model, shapes):
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        expected = model(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(np.asarray(run(x)), expected, rtol=1e-5, atol=1e-6)


def test_a_module_scripted_with_examples_fuses_and_still_runs_any_input():
    torch.manual_seed(0)
    model = _Net().eval()
    plain = torch.jit.optimize_for_inference(torch.jit.script(model))
    assert _groups(plain.graph) == 2  # no dtypes or shapes: fused all the same, compiled at the first call
    assert plain._runner.compiled_groups == 0
    fast = torch.jit.optimize_for_inference(torch.jit.script(model, example_inputs=[(torch.randn(4, 16),)]))
    assert _groups(fast.graph) == 2 and _groups(fast.generic_graph) == 2
    assert fast._runner.compiled_groups == 2  # the specialized plan's, compiled with it
    _check(lambda x: fast(torch.from_numpy(x)).numpy(), model, [(4, 16), (1, 16), (9, 16), (2, 3, 16)])


def test_examples_for_a_function_skip_its_scalars_and_a_dict_names_the_method(tmp_path):
    def fn(x, alpha: float):
        return torch.tanh(x) * alpha + 1.0
    scripted = torch.jit.script(fn, example_inputs=[(torch.randn(3, 5), 2.0)])
    assert [s is None for s in scripted.specialization] == [False, True]
    fast = torch.jit.optimize_for_inference(scripted)
    assert _groups(fast.graph) == 1
    x = np.random.default_rng(1).standard_normal((7, 5)).astype(np.float32)
    np.testing.assert_allclose(fast(torch.from_numpy(x), 0.5).numpy(), np.tanh(x) * 0.5 + 1.0, rtol=1e-6)
    saved = tmp_path / "fn.sc"
    torch.jit.save(fast, str(saved))  # an optimized function keeps its specialization in the archive
    assert rt.load(str(saved)).compiled_kernels == 1
    model = _Net().eval()
    by_method = torch.jit.script(model, example_inputs={model.forward: [(torch.randn(2, 16),)]})
    assert _groups(torch.jit.optimize_for_inference(by_method).graph) == 2


@pytest.mark.parametrize("examples, message", [
    ([(torch.randn(2, 16), torch.randn(2, 16))], "gives 2 values for forward"),
    ([(3.0,)], "expects Tensor, got float"),  # the example types x as a float
    ("x", "non-empty list of argument tuples"),
    ([], "non-empty list of argument tuples"),
])
def test_bad_examples_are_script_errors(examples, message):
    with pytest.raises(ScriptError, match=message):
        torch.jit.script(_Net(), example_inputs=examples)


def test_an_archive_keeps_the_specialization_and_load_compiles_it(tmp_path):
    torch.manual_seed(1)
    model = _Net().eval()
    path = str(tmp_path / "net.sc")
    torch.jit.script(model, example_inputs=[(torch.randn(4, 16),)]).save(path)
    loaded = rt.load(path)
    assert loaded.archive.signatures["forward"]["specialize"] == [{"dtype": "float32", "shape": [None, 16]}]
    assert loaded.compiled_kernels == 2 and _groups(loaded.graphs["forward"]) == 2
    _check(loaded, model, [(4, 16), (1, 16), (2, 3, 16)])
    _check(lambda x: torch.jit.load(path)(torch.from_numpy(x)).detach().numpy(), model, [(3, 16)])


@pytest.mark.parametrize("entry, message", [
    ([{"dtype": "float99", "shape": [None, 16]}], "dtype"),
    ([{"dtype": "float32", "shape": [-1, 16]}], "non-negative ints"),
    ([None, None], "a list of 1 entries"),
    ("all", "a list of 1 entries"),
])
def test_a_bad_specialization_in_an_archive_is_an_archive_error(entry, message, tmp_path):
    path = tmp_path / "net.sc"
    torch.jit.script(_Net().eval(), example_inputs=[(torch.randn(4, 16),)]).save(str(path))
    edited = tmp_path / "edited.sc"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(edited, "w", zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["methods"]["forward"]["specialize"] = entry
                data = json.dumps(manifest).encode()
            out.writestr(info, data)
    with pytest.raises(ArchiveError, match=message):
        rt.load(str(edited))


def _scaled_head(x, n, xs):
    return x * n + xs[0]


def _first_or_zero(x, maybe):
    if maybe is None:
        return x
    return x + maybe


def test_example_inputs_type_the_unannotated_parameters():
    scripted = torch.jit.script(_scaled_head, example_inputs=[(torch.ones(2), 3, [1.5, 2.0])])
    assert "%n : int" in str(scripted.graph) and "%xs : List[float]" in str(scripted.graph)
    np.testing.assert_allclose(scripted(torch.ones(2), 4, [0.5]).numpy(), [4.5, 4.5])
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'n'"):
        scripted(torch.ones(2), "four", [0.5])


def test_examples_that_disagree_make_an_optional_or_leave_a_tensor():
    scripted = torch.jit.script(_first_or_zero, example_inputs=[(torch.ones(2), None), (torch.ones(2), torch.ones(2))])
    assert "Optional[Tensor]" in str(scripted.graph)
    np.testing.assert_allclose(scripted(torch.ones(2), None).numpy(), [1.0, 1.0])
    np.testing.assert_allclose(scripted(torch.ones(2), torch.ones(2)).numpy(), [2.0, 2.0])
