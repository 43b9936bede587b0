"""torch.compile on scriptc's JIT: programs per input signature that equal eager, guards on the weights
they baked in, eager fallback (or Unsupported under fullgraph) for what cannot be captured, and
torch's argument errors."""

import warnings

import numpy as np
import pytest

import scriptc
from scriptc import compiler
from scriptc.testing import assert_close


def _programs(compiled) -> int:
    code = compiled._compiled if isinstance(compiled, scriptc.nn.Module) else compiled._scriptc_compiled
    return len(code._programs)


def _mlp():
    scriptc.manual_seed(0)
    return scriptc.nn.Sequential(scriptc.nn.Linear(6, 8), scriptc.nn.ReLU(inplace=True),
                                 scriptc.nn.Linear(8, 3)).eval()


def test_function_compiles_once_per_signature_and_equals_eager():
    def gelu_chain(x, y):
        return scriptc.nn.functional.gelu(x * y + 1.0).sum(-1), [x - y]

    compiled = scriptc.compile(gelu_chain)
    assert compiled.__name__ == "gelu_chain" and compiled._torchdynamo_orig_callable is gelu_chain
    rng = np.random.default_rng(0)
    for shape in [(3, 5), (3, 5), (7, 2), (3, 5)]:
        x, y = (scriptc.from_numpy(rng.standard_normal(shape).astype(np.float32)) for _ in range(2))
        got, expected = compiled(x, y), gelu_chain(x, y)
        assert isinstance(got, tuple) and isinstance(got[1], list)
        assert_close(got, expected)
    assert _programs(compiled) == 2
    compiled(scriptc.ones(3, 5, dtype=scriptc.float64), scriptc.ones(3, 5, dtype=scriptc.float64))
    assert _programs(compiled) == 3  # another dtype is another signature


def test_module_compiles_under_no_grad_and_keeps_the_module_interface():
    model = _mlp()
    compiled = scriptc.compile(model)
    assert isinstance(compiled, scriptc.nn.Module) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == ["_orig_mod.0.weight", "_orig_mod.0.bias", "_orig_mod.2.weight",
                                           "_orig_mod.2.bias"]
    assert len(list(compiled.parameters())) == 4 and compiled.get_submodule("_orig_mod.0") is model[0]
    assert scriptc.compile(model[0]).in_features == 6  # other attributes read through to the module
    with scriptc.no_grad():
        for batch in (4, 4, 9):
            x = scriptc.randn(batch, 6)
            assert_close(compiled(x), model(x))
    assert _programs(compiled) == 2


def test_calls_needing_autograd_run_eagerly_and_train():
    model = _mlp()
    compiled = scriptc.compile(model)
    x = scriptc.randn(5, 6)
    out = compiled(x)
    assert out.grad_fn is not None and _programs(compiled) == 0
    out.sum().backward()
    grad = model[0].weight.grad.clone()
    model.zero_grad()
    model(x).sum().backward()
    assert_close(grad, model[0].weight.grad)


def test_changed_weights_are_never_served_stale():
    model = _mlp()
    compiled = scriptc.compile(model)
    x = scriptc.randn(4, 6)
    with scriptc.no_grad():
        compiled(x)
        compiled(x)
        model[0].weight.mul_(2.0)  # an in-place update bumps the version the program guards
        assert_close(compiled(x), model(x))
        model.load_state_dict({k: v * 0.5 for k, v in model.state_dict().items()})
        assert_close(compiled(x), model(x))
        model[2].bias.data = scriptc.zeros(3)
        assert_close(compiled(x), model(x))


def test_global_tensors_and_modules_a_function_reads_are_guarded():
    scale = scriptc.tensor([2.0])
    layer = scriptc.nn.Linear(3, 3).eval()

    @scriptc.compile
    def apply(x):
        return layer(x) * scale

    x = scriptc.randn(2, 3)
    with scriptc.no_grad():
        apply(x)
        scale.fill_(3.0)
        assert_close(apply(x), layer(x) * 3.0)
        layer.weight.zero_()
        assert_close(apply(x), layer(x) * 3.0)


def test_training_mode_and_hooks_run_eagerly():
    scriptc.manual_seed(0)
    model = scriptc.nn.Sequential(scriptc.nn.Linear(4, 4), scriptc.nn.BatchNorm1d(4))
    reference = scriptc.nn.Sequential(scriptc.nn.Linear(4, 4), scriptc.nn.BatchNorm1d(4))
    reference.load_state_dict(model.state_dict())
    compiled = scriptc.compile(model)
    x = scriptc.randn(8, 4)
    with scriptc.no_grad():
        assert_close(compiled(x), reference(x))
    assert_close(model[1].running_mean, reference[1].running_mean)  # statistics updated, once
    seen = []
    model.eval()
    model[0].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    with scriptc.no_grad():
        compiled(x)
        compiled(x)
    assert seen == [(8, 4), (8, 4)] and _programs(compiled) == 0


def test_value_dependent_code_falls_back_to_eager_or_raises_under_fullgraph():
    calls = []

    def branchy(x):
        calls.append(1)
        return x.cos() if x.sum() > 0 else x.sin()

    compiled = scriptc.compile(branchy)
    for x in (scriptc.ones(3), -scriptc.ones(3), scriptc.ones(3)):
        assert_close(compiled(x), branchy(x))
    assert len(calls) == 6  # one run per call: the failed capture's run was the call
    with pytest.raises(compiler.Unsupported, match="depends on tensor values"):
        scriptc.compile(branchy, fullgraph=True)(scriptc.ones(3))
    with pytest.raises(compiler.Unsupported, match="item"):
        scriptc.compile(lambda x: x * x.max().item(), fullgraph=True)(scriptc.ones(2))


def test_in_place_writes_and_random_draws_keep_eager_semantics():
    @scriptc.compile
    def bump(x):
        x.add_(1.0)
        return x * 2

    y = scriptc.zeros(3)
    for expected in (1.0, 2.0, 3.0):
        assert bump(y).tolist() == [2 * expected] * 3 and y.tolist() == [expected] * 3

    @scriptc.compile
    def noisy(x):
        return scriptc.nn.functional.dropout(x, 0.5, training=True) + scriptc.rand(3)

    draws = []
    for function in (noisy, noisy.__wrapped__):
        scriptc.manual_seed(5)
        draws.append([function(scriptc.ones(3)) for _ in range(3)])
    for got, expected in zip(*draws):
        assert scriptc.equal(got, expected)

    @scriptc.compile
    def scratch(x):
        y = x * 2
        y.relu_()  # in place on its own intermediate: capturable
        return y

    x = scriptc.randn(4)
    scratch(x)
    assert_close(scratch(x), (x * 2).relu()) and _programs(scratch) == 1


def test_non_tensor_arguments_are_part_of_the_signature():
    @scriptc.compile
    def scaled(x, factor, *, shift=0.0, dims=(0,)):
        return x.sum(dims) * factor + shift

    x = scriptc.randn(3, 4)
    for factor, shift, dims in [(2, 0.0, (0,)), (3, 1.5, (1,)), (2, 0.0, (0,))]:
        assert_close(scaled(x, factor, shift=shift, dims=dims), x.sum(dims) * factor + shift)
    assert _programs(scaled) == 2
    assert_close(scaled(x, 2, dims=[0, 1]), x.sum([0, 1]) * 2)


def test_disable_is_compiling_and_reset():
    observed = []

    @compiler.disable
    def eager_only(x):
        return x + 1

    def uses_disabled(x):
        observed.append(compiler.is_compiling())
        return eager_only(x) * 2

    compiled = scriptc.compile(uses_disabled)
    assert_close(compiled(scriptc.ones(2)), scriptc.full((2,), 4.0)) and _programs(compiled) == 0
    with pytest.raises(compiler.Unsupported, match="eager_only"):
        scriptc.compile(uses_disabled, fullgraph=True)(scriptc.ones(2))
    assert compiler.is_compiling() is False and True in observed

    square = scriptc.compile(lambda x: x * x)
    square(scriptc.ones(2))
    assert _programs(square) == 1
    compiler.reset()
    assert _programs(square) == 0
    model = _mlp()
    assert scriptc.compile(model, disable=True) is model


def test_backends():
    seen = []

    def my_backend(graph_module, example_inputs):
        seen.append((graph_module.graph, [tuple(t.shape) for t in example_inputs]))
        return graph_module

    compiled = scriptc.compile(lambda x: x.exp() - 1, backend=my_backend)
    x = scriptc.randn(2, 3)
    compiled(x)
    assert_close(compiled(x), x.exp() - 1)
    assert len(seen) == 1 and seen[0][1] == [(2, 3)] and "exp" in str(seen[0][0])
    eager = scriptc.compile(lambda x: x.exp() - 1, backend="eager", mode="reduce-overhead")
    eager(x)
    assert_close(eager(x), x.exp() - 1)
    assert compiler.list_backends() == ["inductor"]
    assert compiler.list_backends(exclude_tags=()) == ["aot_eager", "eager", "inductor"]


def test_recompile_limit_warns_and_runs_eagerly():
    compiled = scriptc.compile(lambda x: x + 1, backend="eager", recompile_limit=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 5):
            assert_close(compiled(scriptc.ones(n)), scriptc.full((n,), 2.0))
    assert _programs(compiled) == 2
    assert len([w for w in caught if "recompile limit" in str(w.message)]) == 1


def test_conv_net_compiled_by_default_backend_equals_eager():
    scriptc.manual_seed(0)
    model = scriptc.nn.Sequential(scriptc.nn.Conv2d(3, 4, 3, padding=1), scriptc.nn.BatchNorm2d(4),
                                  scriptc.nn.ReLU(), scriptc.nn.AdaptiveAvgPool2d(1), scriptc.nn.Flatten(),
                                  scriptc.nn.Linear(4, 2)).eval()
    compiled = scriptc.compile(model, mode="max-autotune")
    with scriptc.inference_mode():
        for batch in (2, 2, 3):
            x = scriptc.randn(batch, 3, 8, 8)
            assert_close(compiled(x), model(x))


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kwargs", [
    {"mode": "bad"}, {"backend": "bad"}, {"mode": "default", "options": {}}, {"dynamic": "x"}, {"model": 3},
])
def test_argument_errors_match_torch(torch_validation_kept, kwargs):
    def run(lib):
        options = dict(kwargs)
        model = options.pop("model", lambda x: x)
        with pytest.raises(Exception) as info:
            lib.compile(model, **options)
        return type(info.value).__name__, str(info.value)
    assert run(scriptc) == run(torch)
