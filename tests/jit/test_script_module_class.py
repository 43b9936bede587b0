"""The legacy API: user classes derived from torch.jit.ScriptModule with @torch.jit.script_method,
against torch 2.13."""

from __future__ import annotations

import io

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _define(engine):
    class Base(engine.jit.ScriptModule):
        def __init__(self, width):
            super(Base, self).__init__()  # the explicit form old code uses
            self.fc = engine.nn.Linear(width, width)
            self.scale = 2.0

        @engine.jit.script_method
        def scaled(self, x):
            return self.fc(x) * self.scale

    class Model(Base):
        def __init__(self, width: int):
            super().__init__(width)
            self.count = 3

        @engine.jit.script_method
        def forward(self, x):
            y = x
            for _ in range(self.count):
                y = self.scaled(y).relu()
            return y

        def python_only(self) -> str:
            return "eager"

    return Model


def test_script_methods_compile_with_the_module_and_match_torch():
    reference = _define(torch)(4)
    model = _define(scriptc)(4)
    assert isinstance(model, scriptc.jit.ScriptModule) and isinstance(model, scriptc.nn.Module)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            dict(model.named_parameters())[name].data.copy_(scriptc.from_numpy(p.numpy().copy()))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    expected = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model(scriptc.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.scaled(scriptc.from_numpy(x)).detach().numpy(),
                               reference.scaled(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    buffer = io.BytesIO()
    scriptc.jit.save(model, buffer)
    buffer.seek(0)
    loaded = scriptc.jit.load(buffer)
    np.testing.assert_allclose(loaded(scriptc.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_script_method_that_does_not_compile_fails_at_construction():
    class Broken(scriptc.jit.ScriptModule):
        @scriptc.jit.script_method
        def forward(self, x):
            return undefined_helper(x)  # noqa: F821

    with pytest.raises(RuntimeError, match="undefined_helper"):
        Broken()


def test_define_in_init_compiles_methods_per_instance():
    class Constant(scriptc.jit.ScriptModule):
        def __init__(self, value):
            super().__init__()
            offset = 10  # noqa: F841  (the defined source reads it: names resolve in __init__'s scope)
            self.define(f"""
            def forward(self) -> int:
                return {value} + offset

            def twice(self, x: int) -> int:
                return 2 * x
            """)

    one, two = Constant(1), Constant(2)
    assert (one(), two()) == (11, 12)
    assert one.twice(4) == 8
    assert one._c._type() != two._c._type()


def test_define_refuses_source_other_than_defs():
    class Statements(scriptc.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.define("x = 1")

    with pytest.raises(scriptc.errors.ScriptError, match="expected def"):
        Statements()
