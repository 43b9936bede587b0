"""torch.func / torch.vmap against torch 2.13: mapped dims, nested inputs and outputs, randomness modes,
the autodiff transforms, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import func

torch = pytest.importorskip("torch")

rng = np.random.default_rng(11)


def data(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def assert_same(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    elif isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            assert_same(ours[key], theirs[key])
    else:
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b)


def run_both(make, *arrays):
    """make(T) -> (transformed function); the same arrays as each library's tensors."""
    ours = make(scriptc)(*[scriptc.tensor(a) for a in arrays])
    theirs = make(torch)(*[torch.tensor(a) for a in arrays])
    assert_same(ours, theirs)


VMAP_CASES = [
    ("scale", lambda T: T.vmap(lambda x, y: x * y + 1, in_dims=(0, None)), (data(3, 2), data())),
    ("dot", lambda T: T.vmap(T.dot), (data(4, 3), data(4, 3))),
    ("in_dims 1", lambda T: T.vmap(lambda x: x.sum(0), in_dims=1), (data(2, 5, 3),)),
    ("negative in_dims", lambda T: T.vmap(lambda x: x * 2, in_dims=-1), (data(2, 3),)),
    ("out_dims", lambda T: T.vmap(lambda x: (x, x.sum()), out_dims=(1, 0)), (data(2, 3),)),
    ("matmul", lambda T: T.vmap(lambda a, b: a @ b), (data(3, 2, 4), data(3, 4, 5))),
    ("nested", lambda T: T.vmap(T.vmap(lambda x: x.max())), (data(2, 3, 4),)),
    ("softmax", lambda T: T.vmap(lambda x: T.softmax(x, 0), in_dims=1, out_dims=1), (data(4, 3),)),
]


@pytest.mark.parametrize("name, make, arrays", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_matches_torch(name, make, arrays):
    run_both(make, *arrays)


def test_vmap_over_dicts_and_lists():
    x = data(2, 3)
    for T in (scriptc, torch):
        out = T.vmap(lambda d, xs: {"a": d["a"] * xs[0], "b": xs[1]})({"a": T.tensor(x)}, [T.tensor(x), T.tensor(x)])
        np.testing.assert_allclose(np.asarray(out["a"].tolist()), x * x, rtol=1e-6)
        assert tuple(out["b"].shape) == (2, 3)


def test_vmap_randomness_modes():
    ones = scriptc.ones(4)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        scriptc.vmap(lambda x: x + scriptc.rand(()))(ones)
    same = scriptc.vmap(lambda x: x + scriptc.rand(()), randomness="same")(ones)
    assert len(set(same.tolist())) == 1
    different = scriptc.vmap(lambda x: x + scriptc.rand(()), randomness="different")(ones)
    assert len(set(different.tolist())) == 4
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        scriptc.vmap(lambda x: x, randomness="sometimes")


@pytest.mark.parametrize("call, error, message", [
    (lambda T: T.vmap(lambda x, y: x + y)(T.ones(2), T.ones(3)), ValueError,
     "same size in the mapped dimension, got sizes \\[2, 3\\]"),
    (lambda T: T.vmap(lambda x: 3)(T.ones(2, 3)), ValueError, "must only return Tensors, got type <class 'int'>"),
    (lambda T: T.vmap(lambda x: x, in_dims=2)(T.ones(2)), ValueError,
     "Got in_dim=2 for some input, but that input is a Tensor of dimensionality 1"),
    (lambda T: T.vmap(lambda x: x, in_dims=None)(T.ones(2)), ValueError, "expected `in_dims` to be int"),
])
def test_vmap_errors_match_torch(call, error, message):
    for T in (scriptc, torch):
        with pytest.raises(error, match=message):
            call(T)


AUTODIFF_CASES = [
    ("grad", lambda T: T.func.grad(lambda x: (x ** 3).sum()), (data(3),)),
    ("grad argnums", lambda T: T.func.grad(lambda x, y: (x * y.sin()).sum(), argnums=(0, 1)), (data(3), data(3))),
    ("grad nested input", lambda T: T.func.grad(lambda p: (p["w"] * p["b"]).sum()),
     ({"w": data(2), "b": data(2)},)),
    ("grad_and_value", lambda T: T.func.grad_and_value(lambda x: (x.exp() * 2).mean()), (data(4),)),
    ("grad has_aux", lambda T: T.func.grad(lambda x: ((x ** 2).sum(), x.max()), has_aux=True), (data(3),)),
    ("jacrev", lambda T: T.func.jacrev(lambda x: x.sin() * 2), (data(3),)),
    ("jacrev matrix", lambda T: T.func.jacrev(lambda w, x: w @ x, argnums=0), (data(2, 3), data(3))),
    ("jacfwd", lambda T: T.func.jacfwd(lambda x: (x.tanh(), x.sum())), (data(3),)),
    ("jvp", lambda T: (lambda x, t: T.func.jvp(lambda v: v.exp() * v, (x,), (t,))), (data(3), data(3))),
    ("vmap of grad", lambda T: T.vmap(T.func.grad(lambda x: (x ** 2).sum())), (data(4, 3),)),
]


def _as_inputs(T, value):
    if isinstance(value, dict):
        return {k: T.tensor(v) for k, v in value.items()}
    return T.tensor(value)


@pytest.mark.parametrize("name, make, arrays", AUTODIFF_CASES, ids=[c[0] for c in AUTODIFF_CASES])
def test_autodiff_transforms_match_torch(name, make, arrays):
    ours = make(scriptc)(*[_as_inputs(scriptc, a) for a in arrays])
    theirs = make(torch)(*[_as_inputs(torch, a) for a in arrays])
    assert_same(ours, theirs)


def test_vjp_matches_torch():
    x, cotangent = data(3), data(3)
    out, fn = func.vjp(lambda v: v.sin() * v, scriptc.tensor(x))
    their_out, their_fn = torch.func.vjp(lambda v: v.sin() * v, torch.tensor(x))
    assert_same(out, their_out)
    assert_same(fn(scriptc.tensor(cotangent)), their_fn(torch.tensor(cotangent)))


def test_grad_refuses_a_non_scalar_output():
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor "
                                               "with 1 dims"):
            T.func.grad(lambda x: x * 2)(T.ones(3))


@pytest.mark.parametrize("name, make, arrays", [
    ("hessian", lambda T: T.func.hessian(lambda x: (x ** 3).sum() + (x.tanh() * x).sum()), (data(3),)),
    ("hessian argnums", lambda T: T.func.hessian(lambda w, x: ((w @ x).sigmoid() ** 2).sum(), argnums=0),
     (data(2, 3), data(3))),
    ("grad of grad", lambda T: T.func.grad(T.func.grad(lambda x: (x ** 3).sin())), (np.float32(0.7),)),
], ids=["hessian", "hessian argnums", "grad of grad"])
def test_second_order_transforms_match_torch(name, make, arrays):
    ours = make(scriptc)(*[scriptc.tensor(a) for a in arrays])
    theirs = make(torch)(*[torch.tensor(a) for a in arrays])
    assert_same(ours, theirs)


def test_vmap_over_an_empty_dimension_is_refused_with_a_clear_error():
    with pytest.raises(RuntimeError, match="cannot map over a dimension of size 0"):
        scriptc.func.vmap(lambda a: a.sum())(scriptc.ones(0, 3))


def test_jvp_over_dicts_of_parameters_matches_torch():
    weight, bias, inputs = data(3, 4), data(3), data(5, 4)
    tangent_weight, tangent_bias = data(3, 4), data(3)
    results = []
    for T in (scriptc, torch):
        model = T.nn.Linear(4, 3)
        params = {"weight": T.tensor(weight), "bias": T.tensor(bias)}
        tangents = {"weight": T.tensor(tangent_weight), "bias": T.tensor(tangent_bias)}
        results.append(T.func.jvp(lambda p: T.func.functional_call(model, p, (T.tensor(inputs),)), (params,),
                                  (tangents,)))
    assert_same(results[0], results[1])
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same python structure"):
        func.jvp(lambda p: p["a"], ({"a": scriptc.ones(2)},), ({"a": scriptc.ones(2), "b": scriptc.ones(2)},))
