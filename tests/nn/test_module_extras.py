"""Module.register_backward_hook (the deprecated one), the state_dict hooks (public and the older private
ones), set_submodule and to_empty against torch 2.13."""

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _record_backward(lib, module_factory, x_values, replace=None):
    """Run one backward through a module carrying a deprecated backward hook; what the hook saw, the
    FutureWarnings, and the input's gradient."""
    module = module_factory(lib)
    seen = []

    def hook(mod, grad_input, grad_output):
        seen.append(([None if g is None else g.detach().numpy().copy() for g in grad_input],
                     [g.detach().numpy().copy() for g in grad_output]))
        return None if replace is None else tuple(replace(lib, g) for g in grad_input)

    module.register_backward_hook(hook)
    x = lib.tensor(x_values, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = module(x)
    (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    return seen, messages, x.grad.numpy()


def _relu(lib):
    return lib.nn.ReLU()


def _sin_of_double(lib):
    class SinOfDouble(lib.nn.Module):
        def forward(self, a):
            return (a * 2).sin()
    return SinOfDouble()


@pytest.mark.parametrize("factory", [_relu, _sin_of_double])
@pytest.mark.parametrize("replace", [None, lambda lib, g: g * 3])
def test_register_backward_hook_sees_last_node_like_torch(factory, replace):
    x = np.random.default_rng(0).standard_normal((4, 3))
    ours = _record_backward(scriptc, factory, x, replace)
    theirs = _record_backward(torch, factory, x, replace)
    assert len(ours[0]) == len(theirs[0]) == 1
    for (our_in, our_out), (their_in, their_out) in zip(ours[0], theirs[0]):
        assert len(our_in) == len(their_in) and len(our_out) == len(their_out)
        for a, b in zip(our_in + our_out, their_in + their_out):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    assert ours[1] == theirs[1] and len(ours[1]) == 1
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)


@pytest.mark.parametrize("first, second", [("register_backward_hook", "register_full_backward_hook"),
                                           ("register_full_backward_hook", "register_backward_hook")])
def test_backward_hook_kinds_do_not_mix(first, second):
    for lib in (scriptc, torch):
        module = lib.nn.ReLU()
        getattr(module, first)(lambda *args: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            getattr(module, second)(lambda *args: None)


def test_register_backward_hook_removed_and_without_grad():
    for lib in (scriptc, torch):
        module = lib.nn.ReLU()
        calls = []
        handle = module.register_backward_hook(lambda *args: calls.append(1))
        with lib.no_grad():
            module(lib.ones(2, requires_grad=True))
        handle.remove()
        module(lib.ones(2, requires_grad=True)).sum().backward()
        assert calls == []


def test_register_backward_hook_wrong_count_raises_like_torch():
    messages = []
    for lib in (scriptc, torch):
        module = lib.nn.ReLU()
        module.register_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            out = module(lib.ones(2, requires_grad=True)).sum()
        with pytest.raises(RuntimeError, match="incorrect number of values") as info:
            out.backward()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def _state_dict_pre_hook_calls(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
    calls = []
    model.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append((type(m).__name__, prefix,
                                                                                   keep_vars)))
    handle = model[1].register_state_dict_pre_hook(
        lambda m, prefix, keep_vars: calls.append(("inner", prefix, len(list(m.parameters())))))
    keys = list(model.state_dict(prefix="p.", keep_vars=True))
    handle.remove()
    model.state_dict()
    return calls, keys


def test_register_state_dict_pre_hook_matches_torch():
    assert _state_dict_pre_hook_calls(scriptc) == _state_dict_pre_hook_calls(torch)


def _state_dict_hook_outcomes(lib):
    """What the state_dict post-hooks and load_state_dict pre-hooks (public and private forms) see and do."""
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Linear(3, 1))
    calls = []
    model._register_state_dict_hook(lambda m, sd, prefix, meta: {k: v for k, v in sd.items() if "bias" not in k})
    model[0].register_state_dict_post_hook(lambda m, sd, prefix, meta: calls.append(("post", prefix, sorted(sd))))
    keys = sorted(model.state_dict())
    model[1].register_state_dict_post_hook(lambda m, sd, prefix, meta: {})
    try:
        model.state_dict()
    except RuntimeError as error:
        calls.append(str(error))
    fresh = lib.nn.Sequential(lib.nn.Linear(2, 3))
    fresh._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: calls.append(("private", prefix, len(rest))))
    fresh[0]._register_load_state_dict_pre_hook(
        lambda module, sd, prefix, *rest: calls.append(("with_module", type(module).__name__, prefix)),
        with_module=True)
    fresh[0].register_load_state_dict_pre_hook(lambda module, sd, prefix, *rest: sd.pop(prefix + "bias"))
    result = fresh.load_state_dict({"0.weight": lib.ones(3, 2), "0.bias": lib.ones(3)}, strict=False)
    return calls, keys, result.missing_keys, fresh[0].weight.sum().item()


def test_state_dict_hooks_match_torch():
    assert _state_dict_hook_outcomes(scriptc) == _state_dict_hook_outcomes(torch)


def _set_submodule_outcomes(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
    model.register_buffer("buf", lib.zeros(1))
    outcomes = []
    for target, module, strict in [("1.0", lib.nn.ReLU(), True), ("1.extra", lib.nn.Tanh(), False),
                                   ("1.missing", lib.nn.Tanh(), True), ("", lib.nn.ReLU(), False),
                                   ("0", "not a module", False), ("buf", lib.nn.ReLU(), False),
                                   ("nope.x", lib.nn.ReLU(), False), ("0.weight", lib.nn.ReLU(), False)]:
        try:
            model.set_submodule(target, module, strict=strict)
            outcomes.append(repr(model))
        except (ValueError, AttributeError) as error:
            outcomes.append((type(error).__name__, str(error).replace("torch.nn.modules.activation", "?")
                             .replace("scriptc.nn.activation", "?")))
    return outcomes


def test_set_submodule_matches_torch():
    assert _set_submodule_outcomes(scriptc) == _set_submodule_outcomes(torch)


def test_to_empty_keeps_shapes_dtypes_and_parameter_identity():
    for lib in (scriptc, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        weight = model[0].weight
        assert model.to_empty(device="cpu") is model
        assert model[0].weight is weight and isinstance(weight, lib.nn.Parameter)
        shapes = {name: (tuple(t.shape), str(t.dtype).split(".")[-1]) for name, t in model.state_dict().items()}
        assert shapes["1.num_batches_tracked"] == ((), "int64")
        assert shapes["0.weight"] == ((2, 3), "float32")
        with pytest.raises(TypeError):
            model.to_empty("cpu")
    model = scriptc.nn.Linear(3, 2)
    model.to_empty(device="cpu", recurse=False)
    assert model(scriptc.ones(1, 3)).shape == (1, 2)
