"""A jit.load'ed module held by a module that is then scripted: calls of it run its stored forward
(torch's test_script_loaded_module), also through autograd, freezing, and save + load again."""

import io
from typing import List, NamedTuple

import numpy as np
import pytest

import scriptc as torch
from scriptc import nn
from scriptc.errors import ScriptError


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scales: List[float] = [1.0, 2.0]
        self.shifts = [torch.ones(3), torch.ones(3) * 2]

    def shifted(self, x):
        return x * self.scales[1] + self.shifts[1]

    def forward(self, x):
        return self.shifted(self.fc(x)).relu(), x.sum()


class Holder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        features, total = self.encoder(x)
        return self.head(features) + total


def saved_and_loaded(module):
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


def test_a_loaded_submodule_runs_its_stored_forward():
    encoder = Encoder()
    holder = Holder(saved_and_loaded(torch.jit.script(encoder)))
    x = torch.randn(4, 3)
    features, total = encoder(x)
    expected = (holder.head(features) + total).detach().numpy()
    scripted = torch.jit.script(holder)
    np.testing.assert_allclose(scripted(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(saved_and_loaded(scripted)(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    frozen = torch.jit.optimize_for_inference(torch.jit.script(holder.eval()))
    np.testing.assert_allclose(frozen(x).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_a_loaded_submodule_to_the_inputs():
    holder = Holder(saved_and_loaded(torch.jit.script(Encoder())))
    x = torch.randn(2, 3, requires_grad=True)
    torch.jit.script(holder)(x).sum().backward()
    reference = x.detach().clone().requires_grad_(True)
    holder(reference).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_scripted_code_calls_a_loaded_submodule_but_does_not_read_into_it():
    class ReadsWeight(nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, x):
            return x + self.encoder.fc.bias

    with pytest.raises(ScriptError, match="can call the jit.load'ed module encoder, not read its attribute 'fc'"):
        torch.jit.script(ReadsWeight(saved_and_loaded(torch.jit.script(Encoder()))))


def _archive_of(engine, helper):
    class Uses(engine.nn.Module):
        def forward(self, x):
            return helper(x)

    buffer = io.BytesIO()
    engine.jit.save(engine.jit.script(Uses()), buffer)
    buffer.seek(0)
    return engine.jit.load(buffer)


def _two_archives_with_one_function_name(engine):
    def helper(x):
        return x + 1

    first = _archive_of(engine, helper)

    def helper(x):  # noqa: F811 - (another function of that name, as two versions of one code base have)
        return x * 10

    second = _archive_of(engine, helper)

    class Both(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = first
            self.second = second

        def forward(self, x):
            return self.second(self.first(x)) + self.first(x)

    scripted = engine.jit.script(Both())
    buffer = io.BytesIO()
    engine.jit.save(scripted, buffer)
    buffer.seek(0)
    x = engine.ones(2)
    return scripted(x).tolist(), engine.jit.load(buffer)(x).tolist()


def test_loaded_modules_calling_functions_of_one_name_each_call_their_own():
    real_torch = pytest.importorskip("torch")
    assert _two_archives_with_one_function_name(torch) == _two_archives_with_one_function_name(real_torch) == \
        ([22.0, 22.0], [22.0, 22.0])


class _Named(NamedTuple):
    a: str


def _named_field_of_a_loaded_forward(engine):
    class Returns(engine.nn.Module):
        def forward(self, x):
            return x, _Named(a="hello")

    buffer = io.BytesIO()
    engine.jit.save(engine.jit.script(Returns()), buffer)
    buffer.seek(0)
    loaded = engine.jit.load(buffer)

    class Reads(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = loaded

        def forward(self, x):
            x, named = self.first(x)
            return named.a + "!"

    return engine.jit.script(Reads())(engine.ones(1))


def test_a_loaded_forwards_namedtuple_keeps_its_fields():
    real_torch = pytest.importorskip("torch")
    assert _named_field_of_a_loaded_forward(torch) == _named_field_of_a_loaded_forward(real_torch) == "hello!"
