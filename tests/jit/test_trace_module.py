"""jit.trace_module (several traced methods in one module) and the fuser settings torch.jit exposes,
against torch."""

import warnings

import numpy as np
import pytest

import scriptc
from scriptc.testing import assert_close

torch = pytest.importorskip("torch")


def _module(lib):
    class TwoMethods(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = lib.nn.Linear(3, 2)

        def forward(self, x):
            return self.linear(x).relu()

        def scaled(self, x, y):
            return self.linear(x) * y

    return TwoMethods()


def test_traced_methods_equal_eager_on_new_shapes():
    module = _module(scriptc)
    traced = scriptc.jit.trace_module(module, {"forward": scriptc.ones(2, 3),
                                               "scaled": (scriptc.ones(2, 3), scriptc.ones(2, 2))})
    assert isinstance(traced, scriptc.jit.TracedModule)
    x, y = scriptc.randn(5, 3), scriptc.randn(5, 2)
    with scriptc.no_grad():
        assert_close(traced(x), module(x))
        assert_close(traced.scaled(x, y), module.scaled(x, y))
    assert set(traced.graphs) == {"forward", "scaled"}
    module.linear.weight.data.mul_(2.0)  # state stays the module's
    with scriptc.no_grad():
        assert_close(traced.scaled(x, y), module.scaled(x, y))


def test_keyword_examples_and_check_inputs():
    module = _module(scriptc)
    traced = scriptc.jit.trace_module(module, {"scaled": {"y": scriptc.ones(2, 2), "x": scriptc.ones(2, 3)}},
                                      example_inputs_is_kwarg=True,
                                      check_inputs=[{"scaled": {"x": scriptc.ones(4, 3), "y": scriptc.ones(4, 2)}}])
    x, y = scriptc.randn(1, 3), scriptc.randn(1, 2)
    with scriptc.no_grad():
        assert_close(traced.scaled(x, y), module.scaled(x, y))


def test_value_dependent_method_fails_the_check():
    class Branchy(scriptc.nn.Module):
        def pick(self, x):
            return x * 2 if x.sum() > 0 else x * 3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scriptc.jit.TracerWarning)
        traced = scriptc.jit.trace_module(Branchy(), {"pick": scriptc.ones(2)},
                                          check_inputs=[{"pick": scriptc.ones(2)}])
        assert np.array_equal(traced.pick(-scriptc.ones(2)).numpy(), [-2.0, -2.0])  # the trace baked the branch
        with pytest.raises(scriptc.jit.TracingCheckError):
            scriptc.jit.trace_module(Branchy(), {"pick": scriptc.ones(2)}, check_inputs=[{"pick": -scriptc.ones(2)}])


@pytest.mark.parametrize("call", [
    lambda t, m: t.jit.trace_module(lambda x: x, {"forward": t.ones(1)}),
    lambda t, m: t.jit.trace_module(m, t.ones(1)),
    lambda t, m: t.jit.trace_module(m, {"nope": t.ones(1)}),
])
def test_errors_match_torch(call):
    def run(lib):
        with pytest.raises(Exception) as info:
            call(lib, _module(lib))
        return type(info.value).__name__, str(info.value).replace("TwoMethods", "M")
    assert run(scriptc) == run(torch)


def test_fusion_settings_match_torch():
    for lib in (scriptc, torch):
        previous = lib.jit.set_fusion_strategy([("STATIC", 2)])
        assert lib.jit.set_fusion_strategy(previous) == [("STATIC", 2)]
        lib.jit.enable_onednn_fusion(True)
        assert lib.jit.onednn_fusion_enabled() is True
        lib.jit.enable_onednn_fusion(False)
        assert lib.jit.onednn_fusion_enabled() is False
    assert scriptc.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)]) == [("STATIC", 2), ("DYNAMIC", 10)]
    for bad in ([("BAD", 2)], "x"):
        outcomes = []
        for lib in (scriptc, torch):
            with pytest.raises(Exception) as info:
                lib.jit.set_fusion_strategy(bad)
            outcomes.append((type(info.value), str(info.value)))
        assert outcomes[0] == outcomes[1]
    for lib in (scriptc, torch):
        with pytest.warns(UserWarning, match="Only works in script mode"), lib.jit.strict_fusion():
            pass
    for lib in (scriptc, torch):
        module = lib.jit.script(lib.nn.Sequential(lib.nn.ReLU()))
        with lib.jit.optimized_execution(False):
            assert module(lib.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
