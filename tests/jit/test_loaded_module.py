"""What jit.load returns (scriptc/jit/loaded_module.py) against torch's RecursiveScriptModule from
torch.jit.load of the same model: its tree, parameters and buffers, modes, training it, state
dicts, dtypes, copies, freezing and saving it again, its submodules called by themselves, and what
isinstance says of it."""

import copy
import io

import numpy as np
import pytest

import scriptc
from scriptc import nn

real = pytest.importorskip("torch")


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(1, 2, 3)
            self.bn = lib.nn.BatchNorm2d(2)
            self.act = lib.nn.ReLU()
            self.fc = lib.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc(self.act(self.bn(self.conv(x))).flatten(1))

    return Net()


def _saved(lib, module) -> io.BytesIO:
    buffer = io.BytesIO()
    lib.jit.save(lib.jit.script(module), buffer)
    buffer.seek(0)
    return buffer


def _pair():
    """(ours, torch's): the same weights, scripted, saved and loaded by each library."""
    theirs = _net(real)
    ours = _net(scriptc)
    ours.load_state_dict({k: scriptc.from_numpy(v.numpy().copy()) for k, v in theirs.state_dict().items()})
    return scriptc.jit.load(_saved(scriptc, ours)), real.jit.load(_saved(real, theirs))


def _input(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, 1, 4, 4)).astype(np.float32)


def _same(ours, theirs, rtol=1e-5):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-6)


def test_the_tree_parameters_and_buffers_are_torchs():
    ours, theirs = _pair()
    assert isinstance(ours, nn.Module) and repr(ours) == repr(theirs)
    for what in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(ours, what)()] == [n for n, _ in getattr(theirs, what)()], what
    assert all(p.requires_grad for p in ours.parameters())
    assert ours.fc.original_name == theirs.fc.original_name == "Linear"
    assert repr(ours.fc) == repr(theirs.fc) == "RecursiveScriptModule(original_name=Linear)"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _same(ours.bn.running_var, theirs.bn.running_var)


def test_train_and_eval_reach_every_submodule_and_change_what_a_call_computes():
    ours, theirs = _pair()
    x = _input()
    for mode in (False, True, False):
        ours.train(mode), theirs.train(mode)
        assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()] == [mode] * 5
        with scriptc.no_grad():
            got = ours(scriptc.from_numpy(x))
        with real.no_grad():
            want = theirs(real.from_numpy(x))
        _same(got, want)
        _same(ours.bn.running_mean, theirs.bn.running_mean)  # (train mode: updated by the call)
        assert int(ours.bn.num_batches_tracked) == int(theirs.bn.num_batches_tracked)


def test_training_a_loaded_module_changes_what_the_next_call_computes():
    ours, theirs = _pair()
    x, target = _input(), np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    optimizer = scriptc.optim.SGD(ours.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        ((ours(scriptc.from_numpy(x)) - scriptc.from_numpy(target)) ** 2).mean().backward()
        optimizer.step()
        theirs.zero_grad()
        ((theirs(real.from_numpy(x)) - real.from_numpy(target)) ** 2).mean().backward()
        with real.no_grad():  # (SGD's step, without importing torch.optim's compiler: seconds here)
            for p in theirs.parameters():
                p -= 0.1 * p.grad
        _same(ours.conv.weight.grad, theirs.conv.weight.grad, rtol=1e-4)
    ours.eval(), theirs.eval()
    with scriptc.no_grad():
        got = ours(scriptc.from_numpy(x))
    _same(got, theirs(real.from_numpy(x)), rtol=1e-4)
    _same(ours(scriptc.from_numpy(x)), theirs(real.from_numpy(x)), rtol=1e-4)


def test_load_state_dict_copies_into_the_parameters_and_reports_as_torch():
    ours, theirs = _pair()
    with pytest.raises(RuntimeError) as ours_error:
        ours.load_state_dict({"fc.weight": scriptc.zeros(3, 8)})
    with pytest.raises(RuntimeError) as theirs_error:
        theirs.load_state_dict({"fc.weight": real.zeros(3, 8)})
    assert str(ours_error.value) == str(theirs_error.value)
    ours.load_state_dict({k: scriptc.zeros_like(v) + 0.5 for k, v in ours.state_dict().items()})
    theirs.load_state_dict({k: real.zeros_like(v) + 0.5 for k, v in theirs.state_dict().items()})
    ours.eval(), theirs.eval()
    with scriptc.no_grad():
        _same(ours(scriptc.from_numpy(_input())), theirs(real.from_numpy(_input())))


def test_load_state_dict_reaches_a_quantized_products_weights():
    # the int8 product packs its weights once: the values copied in must not meet the old packing
    def loaded_quantized(seed):
        scriptc.manual_seed(seed)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
        quantized = scriptc.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=scriptc.qint8)
        buffer = io.BytesIO()
        scriptc.jit.save(scriptc.jit.trace(quantized, scriptc.randn(3, 8)), buffer)
        buffer.seek(0)
        return scriptc.jit.load(buffer), quantized

    x = scriptc.randn(3, 8)
    first, _ = loaded_quantized(0)
    second, second_eager = loaded_quantized(1)
    first(x)
    first.load_state_dict(second.state_dict())
    np.testing.assert_allclose(first(x).numpy(), second_eager(x).numpy(), rtol=0, atol=1e-6)


def test_a_module_converted_to_float64_takes_float64_inputs():
    ours, theirs = _pair()
    ours.double().eval(), theirs.double().eval()
    assert ours.fc.weight.dtype == scriptc.float64
    x = _input().astype(np.float64)
    with scriptc.no_grad():
        got = ours(scriptc.from_numpy(x))
    assert got.dtype == scriptc.float64
    _same(got, theirs(real.from_numpy(x)))
    with pytest.raises(RuntimeError):
        ours(scriptc.from_numpy(_input()))


def test_a_deep_copy_is_independent_of_the_original():
    ours, _ = _pair()
    ours.eval()
    twin = copy.deepcopy(ours)
    x = scriptc.from_numpy(_input())
    with scriptc.no_grad():
        before = ours(x)
        _same(twin(x), before)
        twin.fc.bias.add_(1.0)
        _same(ours(x), before)
        _same(twin(x), before + 1.0)
    assert repr(twin) == repr(ours) and twin.fc.bias is not ours.fc.bias


def test_freeze_and_optimize_for_inference_of_a_loaded_module():
    ours, theirs = _pair()
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        scriptc.jit.freeze(ours)
    ours.eval(), theirs.eval()
    want = real.jit.freeze(theirs)(real.from_numpy(_input()))
    for optimized in (scriptc.jit.freeze(ours), scriptc.jit.optimize_for_inference(ours)):
        assert repr(optimized) == "RecursiveScriptModule(original_name=Net)"
        _same(optimized(scriptc.from_numpy(_input())), want)


def test_a_loaded_module_saves_again_with_its_state_as_it_is_now():
    ours, _ = _pair()
    with scriptc.no_grad():
        ours.fc.weight.mul_(2.0)
    ours.eval()
    buffer = io.BytesIO()
    scriptc.jit.save(ours, buffer, _extra_files={"note": "again"})
    buffer.seek(0)
    extra = {"note": ""}
    again = scriptc.jit.load(buffer, _extra_files=extra)
    assert extra["note"] == b"again" and repr(again) == repr(ours) and again.training is False
    assert [n for n, _ in again.named_buffers()] == [n for n, _ in ours.named_buffers()]
    x = scriptc.from_numpy(_input())
    with scriptc.no_grad():
        _same(again(x), ours(x))


def test_what_torch_refuses_on_a_loaded_module_is_refused_in_its_words():
    ours, theirs = _pair()
    for name, args in (("requires_grad_", (False,)), ("register_forward_hook", (print,)), ("to_empty", ())):
        with pytest.raises(RuntimeError) as theirs_error:
            getattr(theirs, name)(*args)
        with pytest.raises(RuntimeError, match=f"^{theirs_error.value}$"):
            getattr(ours, name)(*args)
    with pytest.raises(AttributeError, match="'RecursiveScriptModule' object has no attribute 'nope'"):
        ours.fc.nope  # noqa: B018


def test_deleting_what_the_graphs_read_is_refused_as_torch_refuses_it():
    for lib in (scriptc, real):
        loaded = lib.jit.load(_saved(lib, _net(lib)))
        loaded.extra = 5
        del loaded.extra
        for owner, name in ((loaded, "fc"), (loaded.fc, "weight"), (loaded.bn, "running_mean")):
            with pytest.raises(RuntimeError, match="cannot delete methods or parameters of a script module"):
                delattr(owner, name)
        with pytest.raises(AttributeError, match="'RecursiveScriptModule' object has no attribute 'nothing'"):
            del loaded.nothing
        assert loaded(lib.randn(2, 1, 4, 4)).shape == (2, 3)


def test_a_module_holding_a_loaded_one_traces_saves_and_loads_again():
    class Holder(nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder
            self.head = nn.Linear(3, 2)

        def forward(self, x):
            return self.head(self.encoder(x))

    holder = Holder(scriptc.jit.load(_saved(scriptc, nn.Sequential(nn.Linear(3, 3), nn.ReLU())))).eval()
    traced = scriptc.jit.trace(holder, scriptc.randn(4, 3))
    buffer = io.BytesIO()
    scriptc.jit.save(traced, buffer)
    buffer.seek(0)
    again = scriptc.jit.load(buffer)
    x = scriptc.randn(5, 3)  # (another batch: the loaded module's graph is in the trace, not its result)
    with scriptc.no_grad():
        _same(traced(x), holder(x))
        _same(again(x), holder(x))
    assert [n for n, _ in again.named_parameters()] == ["encoder.0.weight", "encoder.0.bias", "head.weight", "head.bias"]
    assert again.encoder.original_name == "Sequential"


def test_an_archive_without_a_module_tree_loads_every_weight_as_a_parameter():
    import json
    import zipfile

    source = zipfile.ZipFile(_saved(scriptc, _net(scriptc).eval()))
    old = io.BytesIO()
    with zipfile.ZipFile(old, "w", zipfile.ZIP_STORED) as zf:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(content)
                del manifest["modules"]
                content = json.dumps({**manifest, "format_version": 1}).encode()
            zf.writestr(info, content)
    old.seek(0)
    loaded = scriptc.jit.load(old)
    assert [n for n, _ in loaded.named_parameters()][:3] == ["bn.bias", "bn.running_mean", "bn.running_var"]
    assert [n for n, _ in loaded.named_buffers()] == ["bn.num_batches_tracked"]
    assert loaded.bn.original_name == "Module"
    with scriptc.no_grad():
        assert loaded(scriptc.from_numpy(_input())).shape == (4, 3)


def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Dropout(0.0), lib.nn.Linear(8, 2))


@pytest.mark.parametrize("mode", [True, False])
def test_a_compiled_call_differentiates_to_the_parameters_as_torchs(mode):
    # a module that writes no state and draws nothing (its dropout in eval mode) runs compiled with grad
    # on too, backward running its stored graph again for the gradients; in training mode its dropout
    # draws, and the call runs the stored graph on tensors
    theirs = _mlp(real)
    mine = _mlp(scriptc)
    mine.load_state_dict({k: scriptc.from_numpy(v.numpy().copy()) for k, v in theirs.state_dict().items()})
    ours, theirs = scriptc.jit.load(_saved(scriptc, mine)), real.jit.load(_saved(real, theirs))
    ours.train(mode), theirs.train(mode)
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    got, want = ours(scriptc.from_numpy(x)), theirs(real.from_numpy(x))
    assert (got.grad_fn.name() == "_RecomputedBackwardBackward") is (not mode)
    _same(got, want)
    (got ** 2).sum().backward()
    (want ** 2).sum().backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        _same(p.grad, q.grad, rtol=1e-4)


def test_inputs_given_by_name_reach_every_kind_of_call():
    loaded = scriptc.jit.load(_saved(scriptc, _mlp(scriptc).eval()))
    x = scriptc.randn(3, 4)
    with scriptc.no_grad():
        expected = loaded(x)
        _same(loaded(input=x), expected)  # compiled
    _same(loaded(input=x), expected)  # compiled, differentiable
    _same(loaded(input=x.clone().requires_grad_()), expected)  # on tensors
    with pytest.raises(TypeError, match="unexpected input 'nope'"):
        loaded(nope=x)


def _counted(lib):
    class Counted(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.fc = lib.nn.Linear(2, 2)

        def forward(self, x):
            self.calls += 1
            return self.fc(x) * self.calls

    return Counted()


def test_attributes_the_module_assigns_or_the_user_sets_carry_across_every_kind_of_call():
    seen = []
    for lib in (scriptc, real):
        loaded = lib.jit.load(_saved(lib, _counted(lib)))
        x = lib.ones(1, 2)
        with lib.no_grad():
            first = loaded(x)
            loaded.calls = 10
            ratio = (loaded(x) / first).numpy()
        loaded(x)  # (grad on: the run on tensors)
        seen.append(loaded.calls)
        np.testing.assert_allclose(ratio, [[11.0, 11.0]], rtol=1e-5)
    assert seen == [12, 12]


def _two_heads(lib):
    class TwoHeads(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(3, 2)
            self.b = lib.nn.Linear(3, 4)

        def forward(self, x):
            return self.a(x), self.b(x).tanh()

    return TwoHeads()


def test_a_compiled_call_returning_a_tuple_differentiates_each_result():
    theirs = _two_heads(real)
    mine = _two_heads(scriptc)
    mine.load_state_dict({k: scriptc.from_numpy(v.numpy().copy()) for k, v in theirs.state_dict().items()})
    ours, theirs = scriptc.jit.load(_saved(scriptc, mine)), real.jit.load(_saved(real, theirs))
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    (first, second), (want_first, want_second) = ours(scriptc.from_numpy(x)), theirs(real.from_numpy(x))
    assert first.grad_fn.name() == "_RecomputedBackwardBackward"
    (first.sum() + (second ** 2).sum()).backward()
    (want_first.sum() + (want_second ** 2).sum()).backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        _same(p.grad, q.grad, rtol=1e-4)


def _with_plain_attributes(T):
    class Plain(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(4, 3)
            self.steps = 2
            self.label = "plain"
            self.sizes = [1, 2]
            self.ratio = 0.5

        def forward(self, x):
            return self.fc(x)

    return Plain()


def test_a_loaded_module_keeps_the_plain_attributes_its_forward_does_not_read(tmp_path):
    loaded = {}
    for T in (real, scriptc):
        path = str(tmp_path / f"plain_{T.__name__}.pt")
        T.jit.script(_with_plain_attributes(T)).save(path)
        loaded[T.__name__] = T.jit.load(path)
    for name in ("steps", "label", "sizes", "ratio"):
        assert getattr(loaded["scriptc"], name) == getattr(loaded["torch"], name)
    assert loaded["scriptc"].fc.in_features == loaded["torch"].fc.in_features == 4


def test_a_submodule_is_called_by_itself_as_torchs():
    ours, theirs = _pair()
    ours.eval(), theirs.eval()
    features = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    for path, value in (("conv", _input()), ("fc", features)):
        mine, reference = getattr(ours, path), getattr(theirs, path)
        _same(mine(scriptc.from_numpy(value)), reference(real.from_numpy(value)))
        _same(mine.forward(scriptc.from_numpy(value)), reference.forward(real.from_numpy(value)))
    convolved = ours.conv(scriptc.from_numpy(_input()))
    _same(ours.bn(convolved), theirs.bn(real.from_numpy(convolved.detach().numpy())))
    assert "def forward" in ours.fc.code
    for lib, loaded in ((scriptc, ours), (real, theirs)):
        loaded.fc(lib.from_numpy(features)).sum().backward()
    _same(ours.fc.weight.grad, theirs.fc.weight.grad)
    with pytest.raises(TypeError, match="takes 1 inputs, got 2"):
        ours.fc(scriptc.randn(2, 8), scriptc.randn(2, 8))


def test_a_submodule_keeps_its_exported_methods_and_writes_its_state():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x):
            return self.bn(self.fc(x))

        @scriptc.jit.export
        def halved(self, x):
            return self.fc(x) / 2

    model = nn.Sequential(Block(), nn.ReLU())
    loaded = scriptc.jit.load(_saved(scriptc, model))
    x = scriptc.randn(4, 3)
    with scriptc.no_grad():
        _same(getattr(loaded, "0").halved(x), model[0].halved(x))
        _same(getattr(loaded, "0")(x), model[0](x))  # (training mode: the batch's statistics)
    _same(getattr(loaded, "0").bn.running_mean, model[0].bn.running_mean)
    again = io.BytesIO()
    scriptc.jit.save(loaded, again)
    again.seek(0)
    with scriptc.no_grad():
        _same(getattr(scriptc.jit.load(again), "0").fc(x), model[0].fc(x))


def test_a_submodule_of_a_loaded_trace_says_why_it_cannot_be_called_by_itself():
    loaded = scriptc.jit.load(_saved(scriptc, scriptc.jit.trace(nn.Sequential(nn.Linear(2, 2)), scriptc.ones(1, 2))))
    with pytest.raises(RuntimeError, match="the module was traced"):
        getattr(loaded, "0")(scriptc.ones(3, 2))
    assert loaded(scriptc.ones(3, 2)).shape == (3, 2)


def _scaled(lib):
    class Scaled(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)

        def forward(self, x, scale: float = 2.0, shift: int = 1):
            return self.fc(x) * scale + shift

    class Outer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Scaled()

        def forward(self, x):
            return self.inner(x, 3.0, 0)

    return Outer()


def test_a_submodule_called_by_itself_fills_in_its_defaults_as_torchs():
    theirs = _scaled(real)
    mine = _scaled(scriptc)
    mine.load_state_dict({k: scriptc.from_numpy(v.numpy().copy()) for k, v in theirs.state_dict().items()})
    ours, reference = scriptc.jit.load(_saved(scriptc, mine)).inner, real.jit.load(_saved(real, theirs)).inner
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    for args, kwargs in (((), {}), ((0.5,), {}), ((), {"shift": 4}), ((1.5, 2), {})):
        _same(ours(scriptc.from_numpy(x), *args, **kwargs), reference(real.from_numpy(x), *args, **kwargs))
        _same(ours.forward(scriptc.from_numpy(x), *args, **kwargs),
              reference.forward(real.from_numpy(x), *args, **kwargs))


def test_loaded_and_scripted_modules_are_script_modules_as_torchs():
    def kinds(lib):
        module = lib.nn.Sequential(lib.nn.Linear(2, 2))
        made = (lib.jit.script(module), lib.jit.trace(module, lib.randn(1, 2)), lib.jit.load(_saved(lib, module)))
        return [(isinstance(m, lib.jit.ScriptModule), isinstance(m, lib.jit.RecursiveScriptModule),
                 isinstance(m, lib.nn.Module)) for m in made]
    assert kinds(scriptc) == kinds(real)
    for lib in (scriptc, real):
        loaded = lib.jit.load(_saved(lib, lib.nn.Sequential(lib.nn.Linear(2, 2))))
        assert lib.jit.script(loaded) is loaded  # (already scripted)

        def calls_it(x):
            return loaded(x) + 1
        with pytest.raises(RuntimeError, match="Cannot call a ScriptModule that is not a submodule of the caller"):
            lib.jit.script(calls_it)
    loaded = scriptc.jit.load(_saved(scriptc, nn.Sequential(nn.Linear(2, 2))))
    assert isinstance(getattr(loaded, "0"), scriptc.jit.RecursiveScriptModule)
    assert not isinstance(nn.Linear(2, 2), scriptc.jit.ScriptModule)
