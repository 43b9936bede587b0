"""torch.linalg's composite functions (cond, vander, solve_ex, tensorinv, tensorsolve, householder_product)
against torch 2.13: values, gradients (where torch's own backward runs: its cond(p='fro') backward raises
an in-place modification error) and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)


def data(*shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("name, arrays, kwargs", [
    ("cond", (data(3, 3),), {}),
    ("cond", (data(2, 3, 3),), {"p": -2}),
    ("cond", (data(4, 2),), {}),
    ("cond", (data(3, 3),), {"p": "fro"}),
    ("cond", (data(3, 3),), {"p": "nuc"}),
    ("cond", (data(3, 3),), {"p": math.inf}),
    ("cond", (data(3, 3),), {"p": -1}),
    ("cond", (np.zeros((2, 2)),), {"p": 1}),
    ("vander", (data(4),), {}),
    ("vander", (data(2, 3),), {"N": 5}),
    ("solve_ex", (data(3, 3), data(3)), {}),
    ("solve_ex", (data(2, 3, 3), data(2, 3, 2)), {}),
    ("solve_ex", (data(3, 3), data(2, 3)), {"left": False}),
    ("tensorinv", (data(6, 2, 3),), {"ind": 1}),
    ("tensorinv", (data(2, 3, 6),), {}),
    ("tensorsolve", (data(2, 3, 6), data(2, 3)), {}),
    ("tensorsolve", (data(6, 2, 3), data(2, 3)), {"dims": (0,)}),
    ("householder_product", (data(4, 3), data(2)), {}),
    ("householder_product", (data(2, 5, 3), data(2, 3)), {}),
])
def test_matches_torch(name, arrays, kwargs):
    ours = getattr(scriptc.linalg, name)(*[scriptc.tensor(a) for a in arrays], **kwargs)
    theirs = getattr(torch.linalg, name)(*[torch.tensor(a) for a in arrays], **kwargs)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-9)


def test_gradients_match_torch():
    a, tau = data(4, 3), data(2)
    sa, sta = scriptc.tensor(a, requires_grad=True), scriptc.tensor(tau, requires_grad=True)
    ta, tta = torch.tensor(a, requires_grad=True), torch.tensor(tau, requires_grad=True)
    weight = data(4, 3)
    (scriptc.linalg.householder_product(sa, sta) * scriptc.tensor(weight)).sum().backward()
    (torch.linalg.householder_product(ta, tta) * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(sa.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sta.grad.numpy(), tta.grad.numpy(), rtol=1e-6, atol=1e-9)
    m = data(3, 3)
    sm, tm = scriptc.tensor(m, requires_grad=True), torch.tensor(m, requires_grad=True)
    scriptc.linalg.cond(sm).backward()
    torch.linalg.cond(tm).backward()
    np.testing.assert_allclose(sm.grad.numpy(), tm.grad.numpy(), rtol=1e-5, atol=1e-8)


def test_solve_ex_reports_singular_matrices():
    for T in (scriptc, torch):
        result, info = T.linalg.solve_ex(T.zeros(2, 2), T.ones(2))
        assert info.item() == 1 and not T.isfinite(result).all()
        batched = T.linalg.solve_ex(T.stack([T.eye(2), T.zeros(2, 2)]), T.ones(2, 2))
        assert batched.info.tolist() == [0, 1]
        with pytest.raises(Exception, match="The solver failed because the input matrix is singular"):
            T.linalg.solve_ex(T.zeros(2, 2), T.ones(2), check_errors=True)


@pytest.mark.parametrize("call, message", [
    (lambda T: T.linalg.householder_product(T.ones(4, 3), T.ones(4)), "must be greater than or equal to tau"),
    (lambda T: T.linalg.tensorinv(T.ones(2, 3), ind=1), "but got 3 != 2"),
    (lambda T: T.linalg.vander(T.tensor(1.0)), ""),
    (lambda T: T.linalg.cond(T.ones(3, 2), 1), "A must be batches of square matrices, but they are 3 by 2"),
])
def test_errors_match_torch(call, message):
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match=message):
            call(T)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 5, 5)])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_applies_geqrf_q_like_torch(shape, left, transpose):
    a = data(*shape)
    m = shape[-2]
    other = data(*shape[:-2], *((m, 2) if left else (2, m)))
    weight = data(*other.shape)
    results = {}
    for T in (torch, scriptc):
        packed, tau = T.geqrf(T.tensor(a))
        packed, tau, c = (T.tensor(x.detach().numpy() if T is torch else x.numpy(), requires_grad=True)
                          for x in (packed, tau, T.tensor(other)))
        out = T.ormqr(packed, tau, c, left=left, transpose=transpose)
        (out * T.tensor(weight)).sum().backward()
        results[T] = [out.detach().numpy(), packed.grad.numpy(), tau.grad.numpy(), c.grad.numpy()]
    for expected, actual in zip(results[torch], results[scriptc]):
        np.testing.assert_allclose(actual, expected, rtol=1e-7, atol=1e-9)
    method = scriptc.tensor(a).geqrf()
    np.testing.assert_allclose(method.a.ormqr(method.tau, scriptc.tensor(other), left, transpose).numpy(),
                               results[torch][0], rtol=1e-7, atol=1e-9)


def test_geqrf_of_complex_and_zero_columns_matches_torch():
    a = data(3, 2) + 1j * data(3, 2)
    t, s = torch.geqrf(torch.tensor(a)), scriptc.geqrf(scriptc.tensor(a))
    np.testing.assert_allclose(s.a.numpy(), t.a.numpy(), rtol=1e-10)
    np.testing.assert_allclose(s.tau.numpy(), t.tau.numpy(), rtol=1e-10)
    zero_column = np.array([[0.0, 1], [0, 2], [0, 0]])
    t, s = torch.geqrf(torch.tensor(zero_column)), scriptc.geqrf(scriptc.tensor(zero_column))
    np.testing.assert_array_equal(s.tau.numpy(), t.tau.numpy())


_H, _TAU = np.ones((4, 3)), np.ones(3)


@pytest.mark.parametrize("code", [
    "T.geqrf(T.ones(3))",
    "T.geqrf(T.ones(3, 3, dtype=T.int64))",
    "T.ormqr(T.ones(3), tau, T.ones(4, 2, dtype=T.float64))",
    "T.ormqr(h, tau, T.ones(4, dtype=T.float64))",
    "T.ormqr(h, tau, T.ones(3, 2, dtype=T.float64))",
    "T.ormqr(h, tau, T.ones(2, 3, dtype=T.float64), left=False)",
    "T.ormqr(h, tau[:2], T.ones(4, 2, dtype=T.float64))",
    "T.ormqr(h, tau.expand(2, 3), T.ones(4, 2, dtype=T.float64))",
    "T.ormqr(h, tau, T.ones(2, 4, 2, dtype=T.float64))",
    "T.ormqr(h.expand(2, 4, 3), tau.expand(3, 3), T.ones(2, 4, 2, dtype=T.float64))",
    "T.ormqr(h.expand(2, 4, 3), tau.expand(2, 3), T.ones(3, 4, 2, dtype=T.float64))",
    "T.ormqr(h, tau.float(), T.ones(4, 2, dtype=T.float64))",
    "T.ormqr(h, tau, T.ones(4, 2))",
    "T.ormqr(h.long(), tau.long(), T.ones(4, 2).long())",
])
def test_geqrf_and_ormqr_errors_match_torch(code):
    expected = raised(lambda: eval(code, {"T": torch, "h": torch.tensor(_H), "tau": torch.tensor(_TAU)}))
    assert expected is not None
    assert raised(lambda: eval(code, {"T": scriptc, "h": scriptc.tensor(_H), "tau": scriptc.tensor(_TAU)})) == expected
