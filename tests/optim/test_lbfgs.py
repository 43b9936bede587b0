"""LBFGS against torch 2.13 on a small float64 least-squares problem with a quartic term."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.optim.torch_pairs import to_numpy
from tests.torch_values import as_backend

torch = pytest.importorskip("torch")


def _problem(module, rng_seed=0, **options):
    rng = np.random.default_rng(rng_seed)
    a, y, w0 = rng.standard_normal((20, 5)), rng.standard_normal(20), rng.standard_normal(5)
    w = module.nn.Parameter(module.from_numpy(w0))
    a_t, y_t = module.from_numpy(a), module.from_numpy(y)
    opt = module.optim.LBFGS([w], **options)

    def closure():
        opt.zero_grad()
        r = a_t @ w - y_t
        loss = (r * r).sum() + (w ** 4).sum()
        loss.backward()
        return loss

    return w, opt, closure


OPTIONS = [dict(), dict(line_search_fn="strong_wolfe"), dict(lr=0.5, history_size=3, max_iter=7),
           dict(line_search_fn="strong_wolfe", history_size=2, max_iter=30, max_eval=40)]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_lbfgs_follows_torch(options):
    w_t, opt_t, closure_t = _problem(torch, **options)
    w, opt, closure = _problem(scriptc, **options)
    for _ in range(3):
        loss_t, loss = opt_t.step(closure_t), opt.step(closure)
        assert float(loss) == pytest.approx(float(loss_t.detach()), rel=1e-12)
        np.testing.assert_allclose(w.detach().numpy(), w_t.detach().numpy(), rtol=1e-10)
    assert opt.state[w]["func_evals"] == opt_t.state[w_t]["func_evals"]
    assert opt.state[w]["n_iter"] == opt_t.state[w_t]["n_iter"]


def test_lbfgs_state_dict_moves_both_ways():
    options = dict(history_size=4, max_iter=5)
    w_t, opt_t, closure_t = _problem(torch, **options)
    w, opt, closure = _problem(scriptc, **options)
    opt_t.step(closure_t)
    opt.step(closure)
    ours, theirs = to_numpy(opt.state_dict()), to_numpy(opt_t.state_dict())
    assert ours["state"][0].keys() == theirs["state"][0].keys()
    assert ours["param_groups"] == theirs["param_groups"]
    fresh_w, fresh, fresh_closure = _problem(scriptc, **options)
    fresh_w.data = scriptc.from_numpy(w_t.detach().numpy().copy())
    fresh.load_state_dict(theirs)
    w_t2, back, back_closure = _problem(torch, **options)
    w_t2.data = torch.from_numpy(w.detach().numpy().copy())
    back.load_state_dict(as_backend(torch, ours))
    opt_t.step(closure_t)
    fresh.step(fresh_closure)
    np.testing.assert_allclose(fresh_w.detach().numpy(), w_t.detach().numpy(), rtol=1e-10)
    opt.step(closure)
    back.step(back_closure)
    np.testing.assert_allclose(w_t2.detach().numpy(), w.detach().numpy(), rtol=1e-10)


def test_lbfgs_stops_at_once_when_the_gradient_is_tiny():
    w = scriptc.nn.Parameter(scriptc.zeros(3, dtype=scriptc.float64))
    opt = scriptc.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert opt.state[w]["func_evals"] == 1 and "d" not in opt.state[w]


def test_lbfgs_line_search_must_be_strong_wolfe():
    w, opt, closure = _problem(scriptc, line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
