"""jit.trace through scripted code (a scripted submodule, a ScriptFunction): its graph is inlined
with its control flow, as torch's tracer does, so the trace follows inputs that take other paths."""

import io
from typing import Optional

import numpy as np
import pytest

import scriptc
from scriptc.testing import assert_close

torch = pytest.importorskip("torch")


def _gate(lib):
    class Gate(lib.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    return Gate()


def _cell(lib, gate):
    class Cell(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = gate
            self.linear = lib.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = lib.tanh(self.gate(self.linear(x)) + h)
            return new_h, new_h

    return Cell()


def _loop(lib, cell, x, h):
    class Loop(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = lib.jit.trace(cell, (x, h))

        def forward(self, xs):
            h, y = lib.zeros(3, 4), lib.zeros(3, 4)
            for i in range(xs.size(0)):
                y, h = self.cell(xs[i], h)
            return y, h

    return Loop()


def _wrap(lib, loop):
    class Wrap(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.loop = lib.jit.script(loop)

        def forward(self, xs):
            y, h = self.loop(xs)
            return lib.relu(y)

    return Wrap()


def _copy_weights(ours, theirs):
    ours.load_state_dict({k: scriptc.from_numpy(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})


def test_a_scripted_branch_inside_a_trace_follows_new_inputs():
    model = _cell(scriptc, scriptc.jit.script(_gate(scriptc)))
    x, h = scriptc.rand(3, 4), scriptc.rand(3, 4)
    traced = scriptc.jit.trace(model, (x, h))
    for sign in (1.0, -1.0):
        x2 = scriptc.from_numpy(sign * (np.abs(np.random.randn(5, 4)) + 3).astype(np.float32))
        h2 = scriptc.rand(5, 4)
        with scriptc.no_grad():
            assert_close(traced(x2, h2), model(x2, h2))
    assert "if " in traced.code


def test_tracing_a_scripted_loop_matches_torch_at_other_lengths_and_after_load():
    x, h = torch.rand(3, 4), torch.rand(3, 4)
    theirs = _wrap(torch, _loop(torch, _cell(torch, torch.jit.script(_gate(torch))), x, h))
    sx, sh = scriptc.from_numpy(x.numpy()), scriptc.from_numpy(h.numpy())
    ours = _wrap(scriptc, _loop(scriptc, _cell(scriptc, scriptc.jit.script(_gate(scriptc))), sx, sh))
    _copy_weights(ours, theirs)
    traced_theirs = torch.jit.trace(theirs, torch.rand(10, 3, 4))
    traced_ours = scriptc.jit.trace(ours, scriptc.rand(10, 3, 4))
    buffer = io.BytesIO()
    traced_ours.save(buffer)
    buffer.seek(0)
    loaded = scriptc.jit.load(buffer)
    for steps in (10, 4):
        xs = torch.randn(steps, 3, 4)
        expected = traced_theirs(xs).detach().numpy()
        assert_close(traced_ours(scriptc.from_numpy(xs.numpy())).detach().numpy(), expected)
        assert_close(loaded(scriptc.from_numpy(xs.numpy())).detach().numpy(), expected)


def test_a_traced_function_inlines_a_script_function_with_tuple_results():
    @scriptc.jit.script
    def split_scale(x, k: int):
        if k > 1:
            return x * k, x.sum(0)
        return x, x.mean(0)

    def fn(x):
        a, b = split_scale(x, 2)
        return a + b

    traced = scriptc.jit.trace(fn, scriptc.rand(3, 4))
    x = scriptc.rand(6, 4)
    assert_close(traced(x), fn(x))


def test_an_optional_tensor_a_script_function_returns_is_a_tensor_to_the_trace():
    @scriptc.jit.script
    def maybe_scaled(x, scale: Optional[float]) -> Optional[scriptc.Tensor]:
        if scale is None:
            return None
        return x * scale

    def fn(x):
        return maybe_scaled(x, 2.0).index_select(0, scriptc.tensor([1, 0]))

    traced = scriptc.jit.trace(fn, scriptc.rand(3, 4))
    x = scriptc.rand(5, 4)
    assert_close(traced(x), fn(x))


def test_a_scripted_submodule_reading_plain_attributes_runs_traced():
    class Scale(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.times = 3
            self.offsets = [1.0, 2.0]

        def forward(self, x):
            for _ in range(self.times):
                x = x + self.offsets[1]
            return x

    class Outer(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = scriptc.jit.script(Scale())

        def forward(self, x):
            return self.scale(x).relu()

    model = Outer()
    traced = scriptc.jit.trace(model, scriptc.rand(2, 3))
    x = scriptc.randn(5, 3)
    assert_close(traced(x), model(x))
    model.scale.times = 1  # (an attribute set on the scripted module: its next call reads it, as torch's)
    assert_close(model(x), (x + 2.0).relu())


def test_a_scripted_module_the_trace_does_not_hold_is_recorded_with_its_state_as_constants():
    outside = scriptc.jit.script(scriptc.nn.Linear(4, 2))

    def fn(x):
        return outside(x).relu()

    traced = scriptc.jit.trace(fn, scriptc.rand(3, 4))
    x = scriptc.rand(5, 4)
    with scriptc.no_grad():
        assert_close(traced(x), fn(x))
    assert "prim::GetAttr" not in str(traced.graph)



def _flipping(lib):
    @lib.jit.script_if_tracing
    def flip_if_negative(t, scale: float):
        if bool(t.sum() < 0):
            return -t * scale
        return t * scale

    class Caller(lib.nn.Module):
        def forward(self, x):
            return flip_if_negative(x + 1, 2.0)

    return flip_if_negative, Caller()


def test_script_if_tracing_runs_python_eagerly_and_its_control_flow_in_traces():
    fn, caller = _flipping(scriptc)
    assert fn.__name__ == "flip_if_negative" and not isinstance(fn, scriptc.jit.ScriptFunction)
    assert_close(fn(-scriptc.ones(2), 3.0), scriptc.full((2,), 3.0))
    traced = scriptc.jit.trace(caller, (scriptc.ones(2),))
    scripted = scriptc.jit.script(caller)
    ref_fn, ref_caller = _flipping(torch)
    ref_traced = torch.jit.trace(ref_caller, (torch.ones(2),))
    for data in ([1.0, 2.0], [-4.0, -3.0]):  # the traced example took one branch; the other input takes the other
        expected = ref_traced(torch.tensor(data))
        assert caller(scriptc.tensor(data)).tolist() == expected.tolist()
        assert traced(scriptc.tensor(data)).tolist() == expected.tolist()
        assert scripted(scriptc.tensor(data)).tolist() == expected.tolist()
    assert scriptc.jit.script(fn)(-scriptc.ones(2), 1.0).tolist() == ref_fn(-torch.ones(2), 1.0).tolist()
