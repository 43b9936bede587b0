"""jit.trace's example inputs: dicts of tensors are traced as torch traces them, values that cannot
be traced are torch's RuntimeError in torch's words, a dict output needs strict=False, and
check_inputs re-checks the trace on other inputs."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
import scriptc.runtime as rt
from scriptc.jit import TracingCheckError
from tests.torch_errors import raised


class _Pair(scriptc.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = scriptc.nn.Linear(3, 3)

    def forward(self, inputs):
        return self.scale(inputs["a"]) * inputs["b"]


def test_a_dict_of_tensors_is_traced_as_a_dict_input_read_by_key(tmp_path):
    scriptc.manual_seed(0)
    model = _Pair().eval()
    example = {"a": scriptc.randn(2, 3), "b": scriptc.randn(2, 3)}
    traced = scriptc.jit.trace(model, (example,))
    assert "Dict[str, " in str(traced.graph).splitlines()[0]
    other = {"a": scriptc.randn(5, 3), "b": scriptc.randn(5, 3)}
    want = model(other).detach().numpy()
    np.testing.assert_allclose(traced(other).detach().numpy(), want, rtol=1e-6)
    path = str(tmp_path / "pair.sc")
    traced.save(path)
    np.testing.assert_allclose(scriptc.jit.load(path)(other).detach().numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(rt.load(path)({k: v.numpy() for k, v in other.items()}), want, rtol=1e-6)


def test_a_dict_given_as_the_examples_is_the_one_argument():
    traced = scriptc.jit.trace(lambda d: d["x"] * 2, {"x": scriptc.ones(2)})
    assert traced({"x": scriptc.full((3,), 2.0)}).tolist() == [4.0, 4.0, 4.0]


def test_a_dict_input_without_a_key_the_trace_reads_is_a_runtime_error():
    traced = scriptc.jit.trace(lambda d: d["x"] * 2, ({"x": scriptc.ones(2)},))
    with pytest.raises(RuntimeError, match="x"):
        traced({"y": scriptc.ones(2)})


_UNTRACEABLE = {
    "string": "a",
    "list of floats": [[1.0, 2.0]],
    "int in a tuple": (1, 2),
    "tensor and int": ((0, 3),),
    "dict with an int value": ({"a": 0, "b": 1},),
}


@pytest.mark.parametrize("examples", _UNTRACEABLE.values(), ids=_UNTRACEABLE.keys())
def test_examples_that_cannot_be_traced_are_torchs_runtime_error(examples):
    torch = pytest.importorskip("torch")

    def build(T):
        def made(value):  # (a tensor for each 0, so that both libraries get their own)
            if isinstance(value, tuple):
                return tuple(made(v) for v in value)
            if isinstance(value, dict):
                return {k: made(v) for k, v in value.items()}
            return T.ones(2) if value == 0 and not isinstance(value, bool) else value
        return lambda: T.jit.trace(lambda *args: args[0], made(examples))

    expected = raised(build(torch))
    assert expected is not None and expected[0] is RuntimeError
    assert raised(build(scriptc)) == (RuntimeError, expected[1])


def test_a_dict_of_mixed_values_is_refused_in_torchs_words():
    with pytest.raises(RuntimeError, match="Dictionary inputs to traced functions must have consistent type. Found "
                                           "Tensor and int"):
        scriptc.jit.trace(lambda d: d["a"], ({"a": scriptc.ones(2), "b": scriptc.ones(2), "c": 1},))


def test_a_dict_output_needs_strict_false():
    with pytest.raises(RuntimeError, match="Encountering a dict at the output of the tracer"):
        scriptc.jit.trace(lambda x: (x, {"a": x}), scriptc.ones(2))
    traced = scriptc.jit.trace(lambda x: {"a": x * 2}, scriptc.ones(2), strict=False)
    assert traced(scriptc.ones(3))["a"].tolist() == [2.0, 2.0, 2.0]


def _dict_method(T):
    class Heads(T.nn.Module):
        def forward(self, x):
            return x

        def heads(self, x):
            return {"a": x * 2}

    return Heads()


def test_trace_module_refuses_a_dict_output_unless_strict_is_false_as_torch():
    torch = pytest.importorskip("torch")
    expected = raised(lambda: torch.jit.trace_module(_dict_method(torch), {"heads": torch.ones(2)}))
    assert expected is not None
    assert raised(lambda: scriptc.jit.trace_module(_dict_method(scriptc), {"heads": scriptc.ones(2)})) == expected
    traced = scriptc.jit.trace_module(_dict_method(scriptc), {"heads": scriptc.ones(2)}, strict=False)
    assert traced.heads(scriptc.ones(3))["a"].tolist() == [2.0, 2.0, 2.0]


def test_trace_takes_its_arguments_in_torchs_order():
    torch = pytest.importorskip("torch")
    import inspect

    ours, theirs = inspect.signature(scriptc.jit.trace).parameters, inspect.signature(torch.jit.trace).parameters
    assert list(ours)[1:8] == list(theirs)[1:8]  # (example_inputs ... _force_outplace)
    traced = scriptc.jit.trace(lambda x: x * 2, scriptc.ones(2), None, False)  # (optimize, then check_trace)
    assert traced(scriptc.ones(3)).tolist() == [2.0, 2.0, 2.0]


def test_check_inputs_recheck_the_trace_on_other_inputs():
    def gate(x):
        return x * 2 if x.sum() > 0 else x * 3
    with pytest.warns(scriptc.jit.TracerWarning):
        scriptc.jit.trace(gate, scriptc.ones(2), check_inputs=[(scriptc.full((3,), 2.0),)])
    with pytest.warns(scriptc.jit.TracerWarning), pytest.raises(TracingCheckError):
        scriptc.jit.trace(gate, scriptc.ones(2), check_inputs=[(-scriptc.ones(2),)])


def test_what_is_not_callable_is_refused_as_torch_refuses_it():
    torch = pytest.importorskip("torch")
    assert raised(lambda: torch.jit.trace(3, torch.ones(2)))[0] is RuntimeError
    with pytest.raises(RuntimeError, match="traces a function or an nn.Module, got int"):
        scriptc.jit.trace(3, scriptc.ones(2))
