"""torch.jit.freeze as torch 2.13 behaves: frozen modules' results, forward and preserved methods,
and its errors for what it does not freeze."""

from __future__ import annotations

import io

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _counter(engine):
    class Counter(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = engine.ones(3) * 2
            self.count = 0

        def forward(self, x):
            return x * self.w

        @engine.jit.export
        def bump(self, x):
            self.count += 1
            return x + self.count

    return Counter()


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_a_frozen_module_keeps_forward_and_its_preserved_methods(engine):
    frozen = engine.jit.freeze(engine.jit.script(_counter(engine)).eval(), preserved_attrs=["bump"])
    x = engine.ones(3)
    assert frozen.forward(x).tolist() == frozen(x).tolist() == [2.0, 2.0, 2.0]
    assert frozen.bump(x).tolist() == [2.0, 2.0, 2.0] and frozen.bump(x).tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_freeze_refuses_a_training_module_and_an_unscripted_one(engine):
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        engine.jit.freeze(engine.jit.script(engine.nn.Linear(2, 2)))
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        engine.jit.freeze(engine.nn.Linear(2, 2).eval())


def _forking(engine):
    class Inner(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = engine.ones(2, 2)  # a plain attribute of the submodule, not a buffer

        def forward(self, x):
            return x * 3 + self.offset

    class Outer(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            future = engine.jit._fork(self.inner.forward, x)
            return engine.jit._wait(future) + self.inner(x)

    return Outer()


def test_forking_a_submodule_method_reads_that_submodule_scripted_and_frozen():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    expected = _forking(torch)(torch.from_numpy(x)).numpy()
    scripted = scriptc.jit.script(_forking(scriptc)).eval()
    np.testing.assert_allclose(scripted(scriptc.from_numpy(x)).numpy(), expected)
    np.testing.assert_allclose(scriptc.jit.freeze(scripted)(scriptc.from_numpy(x)).numpy(), expected)


def _mixed_tuple(engine):
    class Mixed(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.g = ([1, 2], 3.25, "4.4", engine.tensor([5.5]))

        def forward(self, x):
            return x + self.g[3] * self.g[1] + len(self.g[0]), self.g[2]

    return Mixed()


def test_a_tuple_attribute_holding_a_tensor_freezes(tmp_path):
    x = np.ones(2, np.float32)
    expected, text = _mixed_tuple(torch)(torch.from_numpy(x))
    frozen = scriptc.jit.freeze(scriptc.jit.script(_mixed_tuple(scriptc)).eval())
    got, got_text = frozen(scriptc.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), expected.numpy())
    assert got_text == text
    frozen.save(tmp_path / "frozen.sc")
    np.testing.assert_allclose(scriptc.jit.load(tmp_path / "frozen.sc")(scriptc.from_numpy(x))[0].numpy(),
                               expected.numpy())


def test_a_frozen_module_prints_as_torchs():
    printed = []
    for engine in (scriptc, torch):
        model = engine.nn.Sequential(engine.nn.Linear(2, 2), engine.nn.ReLU()).eval()
        printed.append([repr(engine.jit.freeze(engine.jit.script(model))),
                        repr(engine.jit.optimize_for_inference(engine.jit.script(model))),
                        repr(engine.jit.freeze(engine.jit.trace(model, engine.ones(1, 2))))])
    assert printed[0] == printed[1]


def _counting(engine):
    class Counting(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.count = 0
            self.seen = [1, 2]

        def forward(self, x):
            self.count += 1
            return x + self.count + len(self.seen)

    return Counting()


def test_a_frozen_module_keeps_the_state_it_writes_and_its_own_copy_of_folded_lists():
    """The attribute forward writes stays readable on the frozen module (torch keeps it; it was an
    AttributeError); a list folded into a constant is a copy, so appending to the scripted module's
    list later changes no frozen result (upstream test_freezing: with_submodule, with_mutable_list)."""
    def run(engine):
        scripted = engine.jit.script(_counting(engine)).eval()
        frozen = engine.jit.freeze(scripted)
        first = [frozen(engine.ones(1)).tolist() for _ in range(2)]
        count = frozen.count
        scripted.seen.append(3)
        with pytest.raises(AttributeError):
            assert frozen.seen is None
        return first, count, frozen(engine.ones(1)).tolist()

    assert run(scriptc) == run(torch) == ([[4.0], [5.0]], 2, [6.0])


def _writes_through_a_view(engine):
    class WritesThroughAView(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = engine.tensor([1.0, 2, 3, 4, 5, 6])
            self.b = engine.tensor([1.0, 1.0])

        def forward(self, x):
            y = self.a.view(2, 3)
            y[0][0] += 10
            self.b.add_(1)
            return self.a.sum() * 2 + self.b.sum() + x

    return WritesThroughAView()


@pytest.mark.parametrize("make", ["freeze", "optimize_for_inference"])
def test_an_attribute_written_in_place_is_no_constant_in_any_of_its_reads(make):
    """self.a written through a view (or self.b by an in-place op) and read again: every call sees
    the writes of the calls before (its later read was folded into a constant computed at freeze
    time: the same wrong result on every call) (upstream test_freezing.test_freeze_module_with_tensor)."""
    def run(engine):
        frozen = getattr(engine.jit, make)(engine.jit.script(_writes_through_a_view(engine)).eval())
        results = [frozen(engine.ones(1)).item() for _ in range(3)]
        frozen.a[0] -= 10
        return results, frozen(engine.ones(1)).item()

    assert run(scriptc) == run(torch) == ([67.0, 89.0, 111.0], 113.0)


def _overlapping(engine, written_container: bool):
    class Overlapping(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = engine.tensor([1, 2, 3, 4, 5, 6])
            self.b = [self.a, engine.tensor([10])]

    class WritesTheContainer(Overlapping):
        def forward(self, x):
            self.b[0][0] += 10
            return self.a.sum() + self.b[0].sum()

    class WritesTheTensor(Overlapping):
        def forward(self, x):
            self.a[1] += 10
            return self.a.sum() + self.b[0].sum()

    return WritesTheContainer() if written_container else WritesTheTensor()


def test_a_written_container_attribute_that_shares_memory_with_another_is_refused():
    """self.b = [self.a, t] with self.b[0][0] += 10 is torch's freeze error; writing self.a itself
    freezes, and a read of self.b sees the write as torch's does (it was folded into a constant: upstream
    test_freezing: with_aliased_tensor_attr3/4)."""
    for engine in (scriptc, torch):
        with pytest.raises(RuntimeError, match="module contains attributes values that overlaps"):
            engine.jit.freeze(engine.jit.script(_overlapping(engine, True)).eval())

    def run(engine):
        frozen = engine.jit.freeze(engine.jit.script(_overlapping(engine, False)).eval())
        return [frozen(engine.ones(1)).item() for _ in range(2)]

    assert run(scriptc) == run(torch) == [62, 82]


def _two_weights(engine):
    class TwoWeights(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = engine.tensor([1.0])
            self.b = engine.tensor([2.0])

        def forward(self, x):
            return x + self.a * 2 + self.b

    return TwoWeights()


def test_preserved_attributes_stay_attributes_the_frozen_forward_reads():
    """freeze(m, preserved_attrs=["a"]) keeps `a` an attribute: a write to it shows in the next call
    (it was folded like `b`: `a * 2` computed once at freeze time) (upstream
    test_freezing.with_user_preserved_attr)."""
    def run(engine):
        frozen = engine.jit.freeze(engine.jit.script(_two_weights(engine)).eval(), preserved_attrs=["a"])
        before = frozen(engine.zeros(1)).item()
        frozen.a[0] = 10.0
        return before, frozen(engine.zeros(1)).item()

    assert run(scriptc) == run(torch) == (4.0, 22.0)


def test_freezing_a_module_whose_forward_returns_itself_is_torchs_error():
    def run(engine):
        class ReturnsSelf(engine.nn.Module):
            def forward(self, x):
                return self

        with pytest.raises(RuntimeError, match="attempted to freeze a module that return itself"):
            engine.jit.freeze(engine.jit.script(ReturnsSelf()).eval())

    run(scriptc)
    run(torch)


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_a_module_without_forward_freezes_with_its_exported_methods(engine):
    class OnlyExported(engine.nn.Module):
        @engine.jit.export
        def twice(self, x):
            return 2 * x

    frozen = engine.jit.freeze(engine.jit.script(OnlyExported()).eval(), preserved_attrs=["twice"])
    assert frozen.twice(engine.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(AttributeError, match="forward"):
        frozen(engine.ones(2))


def test_preserved_attributes_of_a_loaded_module_stay_attributes():
    """The same for freeze of what jit.load returned: `a` is read at each call, not folded."""
    def run(engine):
        buffer = io.BytesIO()
        engine.jit.save(engine.jit.script(_two_weights(engine)), buffer)
        buffer.seek(0)
        frozen = engine.jit.freeze(engine.jit.load(buffer).eval(), preserved_attrs=["a"])
        before = frozen(engine.zeros(1)).item()
        frozen.a[0] = 10.0
        return before, frozen(engine.zeros(1)).item()

    assert run(scriptc) == run(torch) == (4.0, 22.0)


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_a_preserved_name_the_module_lacks_is_refused_as_torch_refuses_it(engine):
    scripted = engine.jit.script(_counter(engine)).eval()
    with pytest.raises(RuntimeError, match="Unknown name: bmup"):
        engine.jit.freeze(scripted, preserved_attrs=["bmup"])


@pytest.mark.parametrize("engine", [torch, scriptc], ids=["torch", "scriptc"])
def test_a_frozen_module_takes_the_mode_and_device_calls_before_inference(engine):
    frozen = engine.jit.freeze(engine.jit.script(engine.nn.Linear(4, 3).eval()))
    assert frozen.eval() is frozen and frozen.to("cpu") is frozen and frozen.cpu() is frozen
    assert frozen.to(engine.float64)(engine.ones(2, 4)).dtype == engine.float32  # (its constants stay as frozen)
    assert not frozen.load_state_dict({}).unexpected_keys
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "weight"'):
        frozen.load_state_dict({"weight": engine.ones(3, 4)})
    with pytest.raises(RuntimeError, match="device type at start of device string: nope"):
        frozen.to("nope")
