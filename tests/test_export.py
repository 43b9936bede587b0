"""torch.export against torch 2.13: export, ExportedProgram.module() results and shape guards (static
dims, Dim ranges, dims shared by inputs), dynamic_shapes forms, save/load, and the errors torch raises."""

import io
import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _model(lib):
    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(4, 3)
            self.register_buffer("offset", lib.arange(3.0))

        def forward(self, a, b, scale: float = 1.0):
            return (self.lin(a).relu() + b) * scale + self.offset
    model = Model()
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.arange(p.numel(), dtype=lib.float32).reshape(p.shape) / (5.0 + i) - 0.4)
    return model


def _inputs(lib, rows, cols=4, seed=0):
    rng = np.random.default_rng(seed)
    return (lib.from_numpy(rng.standard_normal((rows, cols)).astype(np.float32)),
            lib.from_numpy(rng.standard_normal((rows, 3)).astype(np.float32)))


def _dynamic(lib, form):
    batch = lib.export.Dim("batch", max=10)
    return {"none": None,
            "named": {"a": {0: batch}, "b": {0: batch}},
            "positional": ({0: batch}, [batch, None]),
            "auto": {"a": {0: lib.export.Dim.AUTO}, "b": {0: lib.export.Dim.DYNAMIC}}}[form]


def _outcome(lib, form, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = lib.export.export(_model(lib), _inputs(lib, 6), dynamic_shapes=_dynamic(lib, form))
    try:
        out = program.module()(*call(lib))
        return "ok", np.round(out.detach().numpy(), 5).tolist()
    except (AssertionError, RuntimeError) as error:
        return type(error).__name__, str(error).splitlines()[0]


_CALLS = {"same": lambda lib: _inputs(lib, 6, seed=1), "other_batch": lambda lib: _inputs(lib, 8, seed=2),
          "too_big": lambda lib: _inputs(lib, 12), "other_cols": lambda lib: (_inputs(lib, 6, 5)[0], _inputs(lib, 6)[1]),
          "batches_differ": lambda lib: (_inputs(lib, 6)[0], _inputs(lib, 7)[1])}


@pytest.mark.parametrize("form", ["none", "named", "positional", "auto"])
@pytest.mark.parametrize("call", sorted(_CALLS))
def test_module_results_and_guards_match_torch(form, call):
    if form == "auto" and call in ("too_big", "batches_differ"):
        pytest.skip("torch relates Dim.AUTO dims from the graph (ranges and equalities it infers)")
    ours, theirs = _outcome(scriptc, form, _CALLS[call]), _outcome(torch, form, _CALLS[call])
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-5)
    else:
        assert ours[1] == theirs[1]


def test_keyword_inputs_state_and_printing():
    model = _model(scriptc)
    a, b = _inputs(scriptc, 6)
    program = scriptc.export.export(model, (a,), {"b": b, "scale": 2.0})
    np.testing.assert_allclose(program.module()(a, b, 2.0).detach().numpy(), model(a, b, 2.0).detach().numpy(), rtol=1e-6)
    assert sorted(program.state_dict) == ["lin.bias", "lin.weight", "offset"]
    assert str(program).startswith("ExportedProgram:\n") and program.run_decompositions() is program
    assert program.example_inputs[1]["scale"] == 2.0


def test_save_and_load_keep_results_and_guards():
    model = _model(scriptc)
    batch = scriptc.export.Dim("batch", min=2, max=10)
    program = scriptc.export.export(model, _inputs(scriptc, 6), dynamic_shapes={"a": {0: batch}, "b": {0: batch}})
    buffer = io.BytesIO()
    scriptc.export.save(program, buffer, extra_files={"note.txt": "hello"})
    buffer.seek(0)
    extra = {"note.txt": ""}
    loaded = scriptc.export.load(buffer, extra_files=extra)
    assert extra["note.txt"] in ("hello", b"hello")
    a, b = _inputs(scriptc, 8)
    np.testing.assert_allclose(loaded.module()(a, b).detach().numpy(), model(a, b).detach().numpy(), rtol=1e-5)
    with pytest.raises(AssertionError, match=r"Guard failed: a.size\(\)\[0\] >= 2"):
        loaded.module()(*_inputs(scriptc, 1))
    with pytest.raises(AssertionError, match=r"Guard failed: a.size\(\)\[1\] == 4"):
        loaded.module()(*_inputs(scriptc, 6, 5))


@pytest.mark.parametrize("bad", [
    lambda lib: lib.export.export(lambda x: x, (lib.ones(1),)),
    lambda lib: lib.export.export(_model(lib), [lib.ones(2, 4), lib.ones(2, 3)]),
    lambda lib: lib.export.export(_model(lib), _inputs(lib, 2))(*_inputs(lib, 2)),
])
def test_bad_calls_raise_like_torch(bad):
    with pytest.raises(Exception) as theirs:
        bad(torch)
    with pytest.raises(Exception) as ours:
        bad(scriptc)
    assert isinstance(ours.value, (type(theirs.value), ValueError, RuntimeError))
    assert str(ours.value).splitlines()[0][:30] == str(theirs.value).splitlines()[0][:30]


def test_control_flow_on_tensor_values_is_refused_as_torch():
    class Gate(scriptc.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
    with pytest.raises(RuntimeError, match="Could not guard on data-dependent expression") as caught:
        scriptc.export.export(Gate(), (scriptc.ones(2),))
    assert type(caught.value).__name__ == "GuardOnDataDependentSymNode"


def test_dim_ranges_are_checked():
    with pytest.raises(ValueError, match="inconsistent"):
        scriptc.export.Dim("d", min=5, max=2)
    assert [d.__name__ for d in scriptc.export.dims("h", "w", max=8)] == ["h", "w"]
    with pytest.raises(ValueError, match="has 2 dims"):
        scriptc.export.export(_model(scriptc), _inputs(scriptc, 6), dynamic_shapes={"a": {3: scriptc.export.Dim("x")}})


def test_graph_signature_and_readable_graph(capsys):
    program = scriptc.export.export(_model(scriptc), _inputs(scriptc, 6), {"scale": 3.0})
    signature = program.graph_signature
    assert (signature.parameters, signature.buffers, signature.user_inputs) == (
        ["lin.weight", "lin.bias"], ["offset"], ["a", "b"])
    text = program.graph_module.print_readable()
    assert "linear" in text and capsys.readouterr().out.strip() == text.strip()
    assert program.module().print_readable(print_output=False) == program.module().code
