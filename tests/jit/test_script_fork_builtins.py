"""torch.jit.fork / _fork of a builtin (an op of the table or a Python builtin) in scripted code:
the call runs as a forked function of its own, in scripted code, a saved archive and eagerly."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ScriptError
from scriptc.runtime import load as runtime_load


def forked_builtins(x: torch.Tensor, y: torch.Tensor):
    summed = torch.jit._fork(torch.add, x, y, alpha=2)
    product = torch.jit.fork(torch.mm, x, y)
    largest = torch.jit._fork(max, 3, 4)
    negated = torch.jit._fork(torch.neg, x)
    return torch.jit._wait(summed), torch.jit.wait(product), torch.jit.wait(largest), torch.jit.wait(negated)


def test_forked_builtins_match_eager_scripted_and_loaded(tmp_path):
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    expected = forked_builtins(x, y)
    scripted = torch.jit.script(forked_builtins)
    got = scripted(x, y)
    for want, have in zip(expected, got):
        np.testing.assert_allclose(np.asarray(have), np.asarray(want), rtol=1e-6)
    path = tmp_path / "forked_builtins.sc"
    torch.jit.save(scripted, path)
    loaded = runtime_load(path, prime=False)(x.numpy(), y.numpy())
    for want, have in zip(expected, loaded):
        np.testing.assert_allclose(np.asarray(have), np.asarray(want), rtol=1e-6)


def test_forked_builtin_agrees_with_torch():
    real = pytest.importorskip("torch")
    data = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)

    def run(module):
        def neg_twice(x: module.Tensor) -> module.Tensor:
            return module.jit._wait(module.jit._fork(module.neg, x)) * 2
        return module.jit.script(neg_twice)(module.from_numpy(data.copy())).numpy()

    np.testing.assert_allclose(run(torch), run(real), rtol=1e-6)


def test_forked_builtin_with_wrong_arguments_is_a_script_error():
    def wrong(x: torch.Tensor):
        return torch.jit.wait(torch.jit._fork(torch.neg, x, x))

    with pytest.raises(ScriptError, match="'neg' accepts"):
        torch.jit.script(wrong)
