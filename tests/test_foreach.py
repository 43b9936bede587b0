"""torch._foreach_* over lists of tensors against torch 2.13: every form (scalar, scalar list, tensor list,
one shared tensor), in place and not, autograd through them, and the errors torch raises."""

import numpy as np
import pytest

import scriptc
from scriptc.foreach import BINARY_OPS, FOREACH_OPS, UNARY_OPS

torch = pytest.importorskip("torch")

SHAPES = [(3,), (2, 4), ()]


def _lists(lib, seed, positive=False, count=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        arrays = [rng.uniform(0.2, 0.9, s) if positive else rng.standard_normal(s) for s in SHAPES]
        out.append([lib.tensor(a.astype(np.float32)) for a in arrays])
    return out


def _same(ours, theirs):
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    else:
        assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)


def _both(call, seed=0, positive=False, count=1):
    """call(lib, *tensor_lists) under both libraries; results and the first list afterwards compared."""
    results = []
    for lib in (scriptc, torch):
        lists = _lists(lib, seed, positive, count)
        results.append((call(lib, *lists), lists[0]))
    _same(results[0][0], results[1][0])
    _same(results[0][1], results[1][1])


def test_every_torch_foreach_op_exists():
    assert sorted(n for n in dir(torch) if n.startswith("_foreach_")) == sorted(FOREACH_OPS)


@pytest.mark.parametrize("name", UNARY_OPS)
@pytest.mark.parametrize("inplace", [False, True])
def test_unary_matches_torch(name, inplace):
    op = f"_foreach_{name}{'_' if inplace else ''}"
    positive = name in ("acos", "asin", "log", "log10", "log1p", "log2", "rsqrt", "sqrt", "lgamma")
    _both(lambda lib, ts: getattr(lib, op)(ts), positive=positive)


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("operand", ["scalar", "scalar_list", "tensor_list", "tensor"])
def test_binary_matches_torch(name, inplace, operand):
    op = f"_foreach_{name}{'_' if inplace else ''}"

    def call(lib, ts, others):
        other = {"scalar": 1.5, "scalar_list": [0.5, 2.0, -1.0], "tensor_list": others,
                 "tensor": lib.tensor(0.75)}[operand]
        if name == "pow":
            ts = [t.abs() + 0.1 for t in ts] if not inplace else ts
        return getattr(lib, op)(ts, other)
    _both(call, seed=1, positive=name == "pow", count=2)


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_matches_torch(name):
    _both(lambda lib, ts, others: getattr(lib, f"_foreach_{name}")(ts, others, alpha=-2), count=2)
    _both(lambda lib, ts, others: getattr(lib, f"_foreach_{name}_")(ts, others, alpha=0.5), count=2)
    _both(lambda lib, ts, others: lib._foreach_add_(ts, lib.tensor(3.0), alpha=0.5), count=2)


def test_scalar_base_pow_matches_torch():
    _both(lambda lib, ts: lib._foreach_pow(2.0, ts))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv", "addcmul_", "addcdiv_"])
@pytest.mark.parametrize("value", ["default", "scalar", "scalar_list", "tensor"])
def test_pointwise_matches_torch(name, value):
    def call(lib, ts, first, second):
        extra = {"default": (), "scalar": (0.3,), "scalar_list": ([1.0, -2.0, 0.5],),
                 "tensor": (lib.tensor([1.0, -2.0, 0.5]),)}[value]
        return getattr(lib, f"_foreach_{name}")(ts, first, second, *extra)
    _both(call, seed=2, positive=True, count=3)


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("weight", ["scalar", "scalar_list", "tensor_list", "0-d tensor"])
def test_lerp_matches_torch(inplace, weight):
    def call(lib, ts, ends, weights):
        w = {"scalar": 0.25, "scalar_list": [0.1, 0.5, 0.9], "tensor_list": weights, "0-d tensor": lib.tensor(0.25)}[weight]
        return getattr(lib, "_foreach_lerp_" if inplace else "_foreach_lerp")(ts, ends, w)
    _both(call, seed=3, count=3)


@pytest.mark.parametrize("call", [
    lambda lib, ts: lib._foreach_norm(ts),
    lambda lib, ts: lib._foreach_norm(ts, 1),
    lambda lib, ts: lib._foreach_norm(ts, float("inf")),
    lambda lib, ts: lib._foreach_norm(ts, 2, dtype=lib.float64),
    lambda lib, ts: lib._foreach_powsum(ts, 3),
    lambda lib, ts: lib._foreach_max(ts),
    lambda lib, ts: lib._foreach_clone(ts),
    lambda lib, ts: lib._foreach_zero_(ts),
    lambda lib, ts: lib._foreach_copy_(ts, [t * 2 + 1 for t in ts]),
    lambda lib, ts: lib._foreach_mm([t.reshape(1, -1) for t in ts], [t.reshape(-1, 1) for t in ts]),
])
def test_reductions_and_copies_match_torch(call):
    _both(call, seed=4)


def test_inplace_returns_the_given_list_and_out_of_place_a_tuple():
    ts = [scriptc.ones(2), scriptc.ones(3)]
    assert scriptc._foreach_mul_(ts, 2.0) is ts
    assert isinstance(scriptc._foreach_mul(ts, 2.0), tuple)
    np.testing.assert_array_equal(ts[1].numpy(), [2.0, 2.0, 2.0])


def test_gradients_flow_through_foreach_ops():
    grads = []
    for lib in (scriptc, torch):
        leaves = [lib.tensor([0.5, -1.0], requires_grad=True), lib.tensor([[2.0]], requires_grad=True)]
        outs = lib._foreach_addcmul(lib._foreach_exp(leaves), leaves, leaves, value=0.5)
        sum(o.sum() for o in lib._foreach_mul(outs, [2.0, 3.0])).backward()
        grads.append([leaf.grad.numpy() for leaf in leaves])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib: lib._foreach_add(lib.ones(2), 1.0),
    lambda lib: lib._foreach_add([lib.ones(2)], "x"),
    lambda lib: lib._foreach_add([1.0], 1.0),
    lambda lib: lib._foreach_add([], 1.0),
    lambda lib: lib._foreach_add([lib.ones(2), lib.ones(3)], [1.0]),
    lambda lib: lib._foreach_add([lib.ones(2), lib.ones(3)], [lib.ones(2)]),
    lambda lib: lib._foreach_mul([lib.ones(2)], 2.0, alpha=2),
    lambda lib: lib._foreach_add([lib.ones(2)], 2.0, alpha=2),
    lambda lib: lib._foreach_sub([lib.ones(2)], lib.ones(2)),
])
def test_bad_arguments_raise_like_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(scriptc)
    assert str(ours.value).splitlines()[0][:40] == str(theirs.value).splitlines()[0][:40]
