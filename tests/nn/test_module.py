"""The Module API as torch's: registration, traversal, hooks, state_dict loading and its errors, conversion."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _block(T):
    class Block(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(3, 4)
            self.register_buffer("steps", T.zeros(1))
            self.register_buffer("cache", T.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc(x).relu()
    return Block()


def _model(T=scriptc):
    class Model(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = _block(T)
            self.second = T.nn.Sequential(OrderedDict(out=T.nn.Linear(4, 2)))
            self.shared = self.first  # the same module twice

        def forward(self, x):
            return self.second(self.first(x))
    return Model()


def test_traversal_names_and_duplicates_match_torch():
    ours, theirs = _model(), _model(torch)
    for call in (lambda m: [n for n, _ in m.named_modules()],
                 lambda m: [n for n, _ in m.named_modules(remove_duplicate=False)],
                 lambda m: [n for n, _ in m.named_modules(prefix="m")],
                 lambda m: [n for n, _ in m.named_parameters()],
                 lambda m: [n for n, _ in m.named_parameters(remove_duplicate=False)],
                 lambda m: [n for n, _ in m.named_parameters(prefix="p", recurse=False)],
                 lambda m: [n for n, _ in m.named_buffers()],
                 lambda m: [n for n, _ in m.first.named_buffers(recurse=False)],
                 lambda m: [n for n, _ in m.named_children()],
                 lambda m: list(m.state_dict()),
                 lambda m: list(m.state_dict(prefix="p.")),
                 repr):
        assert call(ours) == call(theirs)


def test_get_submodule_parameter_buffer():
    model = _model()
    assert model.get_submodule("first.fc") is model.first.fc
    assert model.get_parameter("second.out.bias") is model.second.out.bias
    assert model.get_buffer("first.steps") is model.first.steps
    for call, message in [(lambda: model.get_submodule("first.nope"), "Block has no attribute `nope`"),
                          (lambda: model.get_parameter("first.steps"), "`steps` is not an nn.Parameter"),
                          (lambda: model.get_buffer("second.out.weight"), "`weight` is not a buffer"),
                          (lambda: model.get_submodule("second.out.weight"), "`weight` is not an nn.Module")]:
        with pytest.raises(AttributeError, match=message):
            call()


def test_registration_errors_are_torchs():
    for T in (torch, scriptc):
        m = T.nn.Linear(2, 2)
        with pytest.raises(KeyError) as info:
            m.register_buffer("in_features", T.zeros(1))
        assert info.value.args[0] == "attribute 'in_features' already exists"
        with pytest.raises(KeyError) as info:
            m.register_buffer("a.b", T.zeros(1))
        assert info.value.args[0] == 'buffer name can\'t contain "."'
        with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
            m.weight = T.zeros(2, 2)
        with pytest.raises(TypeError, match="is not a Module subclass"):
            m.add_module("child", 3)
        with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'p'"):
            m.register_parameter("p", _non_leaf(T))


def _non_leaf(T):
    """A Parameter that is the result of an op (torch only makes one by changing a result's class)."""
    p = T.nn.Parameter(T.zeros(2))
    q = p * 2
    if T is torch:
        q.__class__ = T.nn.Parameter
        return q
    p.grad_fn = q.grad_fn
    return p


def test_setattr_and_delattr_move_between_kinds():
    m = scriptc.nn.Module()
    m.x = scriptc.nn.Linear(2, 2)
    m.x = scriptc.nn.Parameter(scriptc.zeros(2))          # a parameter replaces the module
    assert "x" in m._parameters and "x" not in m._modules
    with pytest.raises(TypeError, match="cannot assign 'torch.nn.modules.linear.Linear' as parameter 'x'"):
        m.x = scriptc.nn.Linear(2, 2)
    del m.x
    assert not hasattr(m, "x")
    m.register_buffer("b", None)
    m.b = scriptc.ones(1)
    assert "b" in m._buffers
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'b'"):
        m.b = 3
    assert "b" in dir(m)


def test_load_state_dict_reports_as_torch():
    ours, theirs = scriptc.nn.Linear(3, 4), torch.nn.Linear(3, 4)
    bad = {"weight": np.zeros((4, 4), np.float32), "extra": np.zeros(1, np.float32)}
    messages = []
    for model, state in ((ours, {k: scriptc.tensor(v) for k, v in bad.items()}),
                         (theirs, {k: torch.tensor(v) for k, v in bad.items()})):
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(state)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: '
                                  '"bias". \n\tUnexpected key(s) in state_dict: "extra". \n\tsize mismatch for weight')
    result = ours.load_state_dict({"weight": scriptc.zeros(4, 3)}, strict=False)
    assert result == theirs.load_state_dict({"weight": torch.zeros(4, 3)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == []
    assert repr(ours.load_state_dict(ours.state_dict())) == "<All keys matched successfully>"
    full = ours.load_state_dict({"weight": scriptc.ones(4, 3), "bias": scriptc.ones(4), "x": scriptc.ones(1)},
                                strict=False)
    assert full.unexpected_keys == ["x"] and float(ours.weight.sum()) == 12.0


def test_load_state_dict_assign_adopts_the_tensors():
    m = scriptc.nn.Linear(2, 2)
    weight = scriptc.ones(2, 2)
    m.load_state_dict({"weight": weight, "bias": scriptc.zeros(2)}, assign=True)
    assert isinstance(m.weight, scriptc.nn.Parameter) and m.weight.requires_grad
    weight.add_(1)
    assert float(m.weight.sum()) == 8.0


def test_state_dict_keep_vars_and_non_persistent():
    block = _block(scriptc)
    assert "cache" not in block.state_dict()
    assert block.state_dict(keep_vars=True)["fc.weight"] is block.fc.weight
    assert not block.state_dict()["fc.weight"].requires_grad


def _versioned(T):
    class Versioned(T.nn.Module):
        _version = 3

        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(2, 2)
            self.bn = T.nn.BatchNorm1d(2)
            self.seen = []

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            self.seen.append((prefix, dict(local_metadata)))
            super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)
    return T.nn.Sequential(Versioned())


def test_state_dict_metadata_carries_each_modules_version_to_load_state_dict():
    ours, theirs = _versioned(scriptc), _versioned(torch)
    sd_ours, sd_theirs = ours.state_dict(), theirs.state_dict()
    assert dict(sd_ours._metadata) == dict(sd_theirs._metadata) == {
        "": {"version": 1}, "0": {"version": 3}, "0.fc": {"version": 1}, "0.bn": {"version": 2}}
    ours.load_state_dict(sd_ours)
    theirs.load_state_dict(sd_theirs)
    ours.load_state_dict(dict(sd_ours), assign=True)  # a plain dict has no metadata
    theirs.load_state_dict(dict(sd_theirs), assign=True)
    assert ours[0].seen == theirs[0].seen == [("0.", {"version": 3}), ("0.", {"assign_to_params_buffers": True})]


@pytest.mark.parametrize("version", [None, 1])
def test_batch_norm_checkpoint_without_num_batches_tracked_loads_as_in_torch(version):
    results = []
    for T in (scriptc, torch):
        bn = T.nn.BatchNorm2d(3)
        bn.num_batches_tracked.fill_(5)
        state = OrderedDict((k, v) for k, v in T.nn.BatchNorm2d(3).state_dict().items() if "num_batches" not in k)
        if version is not None:
            state._metadata = {"": {"version": version}}
        results.append((repr(bn.load_state_dict(state)), int(bn.num_batches_tracked)))
    assert results[0] == results[1] == ("<All keys matched successfully>", 5)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        state = OrderedDict((k, v) for k, v in scriptc.nn.BatchNorm2d(3).state_dict().items() if "num_b" not in k)
        state._metadata = {"": {"version": 2}}
        scriptc.nn.BatchNorm2d(3).load_state_dict(state)


def test_forward_hooks_order_kwargs_and_removal():
    calls = []
    m = scriptc.nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    h3 = m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(("kw", sorted(kwargs))), prepend=True,
                                 with_kwargs=True)
    out = m(scriptc.ones(1, 2))
    assert calls == ["pre", ("kw", []), "post"]
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 1)
    for h in (h1, h2, h3):
        h.remove()
    assert not m._forward_hooks and not m._forward_pre_hooks and not m._forward_hooks_with_kwargs


def test_forward_pre_hook_with_kwargs_and_always_call():
    m = scriptc.nn.Linear(2, 2)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        m(scriptc.ones(1, 3))
    assert seen == [None]


def _hooked(T):
    T.manual_seed(0)
    m = T.nn.Linear(3, 2)
    record = []
    m.register_full_backward_pre_hook(lambda mod, g_out: record.append(("pre", [g.numpy().copy() for g in g_out])))
    m.register_full_backward_hook(lambda mod, g_in, g_out: record.append(
        ("full", [None if g is None else g.numpy().copy() for g in g_in]))
        or (g_in[0] * 2,))
    return m, record


def test_full_backward_hooks_match_torch():
    results = []
    for T in (torch, scriptc):
        m, record = _hooked(T)
        if T is scriptc:
            m.load_state_dict({k: v.detach().numpy() for k, v in results[0][0].state_dict().items()})
        x = T.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        (m(x) * T.tensor([[1.0, 2.0]])).sum().backward()
        results.append((m, record, x.grad.numpy()))
    (_, theirs, their_grad), (_, ours, our_grad) = results
    assert [r[0] for r in ours] == [r[0] for r in theirs] == ["pre", "full"]
    for (_, a), (_, b) in zip(ours, theirs):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-6)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6)


def test_backward_hook_without_input_grads_sees_none():
    m = scriptc.nn.Linear(3, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, g_in, g_out: seen.append((g_in, len(g_out))))
    m(scriptc.ones(2, 3)).sum().backward()
    assert seen == [((None,), 1)] and m.weight.grad is not None


def test_apply_train_requires_grad_zero_grad():
    model = _model()
    visited = []
    model.apply(lambda mod: visited.append(type(mod).__name__))
    assert visited == ["Linear", "Block", "Linear", "Sequential", "Model"]
    assert model.eval() is model and not model.first.fc.training
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_(True)
    model(scriptc.ones(1, 3)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")


def test_conversions_keep_parameter_identity():
    model = _model()
    weight = model.second.out.weight
    model(scriptc.ones(1, 3)).sum().backward()
    assert model.double() is model and model.second.out.weight is weight
    assert weight.dtype == scriptc.float64 and weight.grad.dtype == scriptc.float64
    assert model.first.steps.dtype == scriptc.float64
    model.to(scriptc.float32)
    assert weight.dtype == scriptc.float32
    model.to(scriptc.zeros(1, dtype=scriptc.float64))
    assert weight.dtype == scriptc.float64
    model.half().float()
    assert weight.dtype == scriptc.float32
    model.bfloat16()
    assert weight.dtype == scriptc.bfloat16 and model.first.steps.dtype == scriptc.bfloat16
    model.float()
    model.to("cpu").cpu()
    model.type(scriptc.float64)
    assert weight.dtype == scriptc.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        model.to(scriptc.int64)


def test_repr_and_deepcopy():
    model = _model()
    clone = copy.deepcopy(model)
    assert repr(clone) == repr(model)
    assert clone.second.out.weight is not model.second.out.weight
    assert isinstance(clone.second.out.weight, scriptc.nn.Parameter)
    assert clone.shared is clone.first


def test_register_module_and_extra_state():
    class WithState(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    m = scriptc.nn.Module()
    m.register_module("inner", WithState())
    state = m.state_dict()
    assert state["inner._extra_state"] == {"value": 1}
    state["inner._extra_state"] = {"value": 5}
    m.load_state_dict(state)
    assert m.inner.value == 5
