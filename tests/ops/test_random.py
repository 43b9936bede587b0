"""Random ops and torch.Generator: every random op takes `generator=` and replays from a seed; samples
have the right distribution (moments on large draws); errors are torch's."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import scriptc as torch
from scriptc import ops

# One call per random op, with a `generator` to pass: (op name, call(torch_module, generator)).
DRAWS = {
    "rand": lambda t, g: t.rand(3, 4, generator=g),
    "randn": lambda t, g: t.randn(3, 4, generator=g, dtype=t.float64),
    "rand_like": lambda t, g: t.rand_like(t.zeros(5), generator=g),
    "randn_like": lambda t, g: t.randn_like(t.zeros(5), generator=g),
    "randint": lambda t, g: t.randint(10, (6,), generator=g),
    "randint.low": lambda t, g: t.randint(-5, 5, (6,), generator=g),
    "randint_like": lambda t, g: t.randint_like(t.zeros(5), 7, generator=g),
    "randint_like.low": lambda t, g: t.randint_like(t.zeros(5), 3, 9, generator=g),
    "randperm": lambda t, g: t.randperm(8, generator=g),
    "normal.Tensor_Tensor": lambda t, g: t.normal(t.zeros(4), t.ones(4), generator=g),
    "normal.Tensor_float": lambda t, g: t.normal(t.zeros(4), 2.0, generator=g),
    "normal.float_Tensor": lambda t, g: t.normal(1.0, t.ones(4), generator=g),
    "normal.float_float": lambda t, g: t.normal(1.0, 2.0, (4,), generator=g),
    "normal.like": lambda t, g: t.empty(5).normal_(generator=g),
    "uniform": lambda t, g: t.empty(5).uniform_(-1, 1, generator=g),
    "exponential": lambda t, g: t.empty(5).exponential_(2.0, generator=g),
    "geometric": lambda t, g: t.empty(5).geometric_(0.3, generator=g),
    "log_normal": lambda t, g: t.empty(5).log_normal_(generator=g),
    "cauchy": lambda t, g: t.empty(5).cauchy_(generator=g),
    "random": lambda t, g: t.empty((), dtype=t.int64).random_(generator=g),
    "random.to": lambda t, g: t.empty(5).random_(9, generator=g),
    "random.from": lambda t, g: t.empty(5, dtype=t.int32).random_(3, 9, generator=g),
    "bernoulli": lambda t, g: t.bernoulli(t.full((6,), 0.5), generator=g),
    "bernoulli.p": lambda t, g: t.bernoulli(t.zeros(6), 0.5, generator=g),
    "bernoulli.fill": lambda t, g: t.empty(6).bernoulli_(0.5, generator=g),
    "multinomial": lambda t, g: t.multinomial(t.ones(2, 6), 3, generator=g),
    "poisson": lambda t, g: t.poisson(t.full((6,), 3.0), generator=g),
    "_standard_gamma": lambda t, g: t._standard_gamma(t.full((6,), 2.0), generator=g),
    "binomial": lambda t, g: t.binomial(t.full((6,), 10.0), t.full((6,), 0.5), generator=g),
    "_sample_dirichlet": lambda t, g: t._sample_dirichlet(t.ones(2, 3), generator=g),
    "rrelu": lambda t, g: t.rrelu(-t.ones(6), training=True, generator=g),
}
# Ops drawing from the default generator only, as in torch.
WITHOUT_GENERATOR = {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"}


def test_every_random_op_takes_a_generator_and_has_a_draw():
    random_ops = [op for op in ops.all_ops() if op.kind == ops.RANDOM and op.inplace_of is None]
    lacking = [op.name for op in random_ops if "generator" not in op.arg_index and op.name not in WITHOUT_GENERATOR]
    assert not lacking
    assert {op.name for op in random_ops} - WITHOUT_GENERATOR == set(DRAWS)


@pytest.mark.parametrize("name", DRAWS)
def test_a_seeded_generator_replays_and_leaves_the_default_alone(name):
    draw = DRAWS[name]
    torch.manual_seed(1)
    default_state = torch.get_rng_state()
    first = draw(torch, torch.Generator().manual_seed(42))
    assert torch.equal(torch.get_rng_state(), default_state)
    again = draw(torch, torch.Generator().manual_seed(42))
    assert torch.equal(first, again)
    torch.manual_seed(7)
    from_default = draw(torch, None)
    torch.manual_seed(7)
    assert torch.equal(from_default, draw(torch, None))


def test_generator_api():
    g = torch.Generator()
    assert g.device == torch.device("cpu") and g.initial_seed() == 67280421310721
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert torch.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(ValueError, match="Overflow when unpacking long"):
        g.manual_seed(2 ** 64)
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.dim() == 1
    a = torch.rand(4, generator=g)
    assert g.set_state(state) is g
    assert torch.equal(torch.rand(4, generator=g), a)
    restored = pickle.loads(pickle.dumps(g.set_state(state)))
    assert torch.equal(torch.rand(4, generator=restored), a)
    new_seed = g.seed()
    assert g.initial_seed() == new_seed
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(torch.zeros(3))
    with pytest.raises(RuntimeError, match="RNG state size to be 3"):
        g.set_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(TypeError, match="expected a torch.Generator"):
        torch.rand(2, generator=3)


def test_default_generator_and_the_random_module():
    assert torch.manual_seed(3) is torch.default_generator
    assert torch.initial_seed() == 3 == torch.random.initial_seed()
    state = torch.get_rng_state()
    a = torch.randn(3)
    torch.set_rng_state(state)
    assert torch.equal(torch.randn(3), a)
    torch.set_rng_state(state)
    with torch.random.fork_rng():
        torch.randn(100)
    assert torch.equal(torch.randn(3), a)
    assert torch.seed() == torch.initial_seed()


N = 200_000


@pytest.mark.parametrize("name, draw, mean, var", [
    ("uniform_", lambda g: torch.empty(N, dtype=torch.float64).uniform_(-1, 3, generator=g), 1.0, 16 / 12),
    ("normal_", lambda g: torch.empty(N, dtype=torch.float64).normal_(2, 3, generator=g), 2.0, 9.0),
    ("exponential_", lambda g: torch.empty(N, dtype=torch.float64).exponential_(4, generator=g), 0.25, 1 / 16),
    ("geometric_", lambda g: torch.empty(N, dtype=torch.float64).geometric_(0.25, generator=g), 4.0, 0.75 / 0.0625),
    ("log_normal_", lambda g: torch.empty(N, dtype=torch.float64).log_normal_(0, 0.5, generator=g),
     np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    ("normal", lambda g: torch.normal(torch.full((N,), -1.0), torch.full((N,), 0.5), generator=g), -1.0, 0.25),
    ("bernoulli", lambda g: torch.bernoulli(torch.full((N,), 0.3), generator=g), 0.3, 0.21),
    ("poisson", lambda g: torch.poisson(torch.full((N,), 4.0), generator=g), 4.0, 4.0),
    ("_standard_gamma", lambda g: torch._standard_gamma(torch.full((N,), 3.0), generator=g), 3.0, 3.0),
    ("binomial", lambda g: torch.binomial(torch.full((N,), 8.0), torch.full((N,), 0.25), generator=g), 2.0, 1.5),
    ("rand", lambda g: torch.rand(N, generator=g), 0.5, 1 / 12),
    ("randint", lambda g: torch.randint(0, 10, (N,), generator=g).double(), 4.5, 99 / 12),
    ("random_", lambda g: torch.empty(N).random_(0, 4, generator=g), 1.5, 15 / 12),
])
def test_sample_moments(name, draw, mean, var):
    sample = draw(torch.Generator().manual_seed(0)).numpy().astype(np.float64)
    assert abs(sample.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(sample.var() / var - 1) < 0.03


def test_dtypes_follow_torch():
    assert torch.rand(2).dtype == torch.float32 and torch.randn(2, dtype=torch.float64).dtype == torch.float64
    assert torch.randint(3, (2,)).dtype == torch.int64 and torch.randperm(3).dtype == torch.int64
    assert torch.randint_like(torch.zeros(2, dtype=torch.int32), 5).dtype == torch.int32
    assert torch.multinomial(torch.ones(3), 2).dtype == torch.int64
    assert torch.bernoulli(torch.full((2,), 0.5, dtype=torch.float64)).dtype == torch.float64
    ints = torch.zeros(5, dtype=torch.int64).bernoulli_(0.5)
    assert ints.dtype == torch.int64 and set(ints.tolist()) <= {0, 1}
    big = torch.empty(1000, dtype=torch.int64).random_(generator=torch.Generator().manual_seed(0))
    assert big.min() >= 0 and big.max() > 2 ** 60
    halfish = torch.empty(1000).random_(generator=torch.Generator().manual_seed(0))
    assert halfish.max() <= 2 ** 24 and (halfish == halfish.floor()).all()
    assert sorted(torch.randperm(10).tolist()) == list(range(10))


def test_multinomial_draws():
    g = torch.Generator().manual_seed(0)
    probs = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 0.0, 0.0, 0.0, 1.0]])
    picks = torch.multinomial(probs, 3, generator=g)
    assert picks.shape == (2, 3)
    for row, p in zip(picks.tolist(), probs.tolist()):
        assert len(set(row)) == 3 and all(p[i] > 0 for i in row[:2])
    counts = np.bincount(torch.multinomial(torch.tensor([1.0, 2.0, 7.0]), 100_000, True, generator=g).numpy(),
                         minlength=3)
    np.testing.assert_allclose(counts / 100_000, [0.1, 0.2, 0.7], atol=0.01)
    # Without replacement the first pick follows p, the second p among the rest.
    firsts = torch.multinomial(torch.tensor([[1.0, 2.0, 7.0]]).expand(20_000, 3), 2, generator=g).numpy()
    np.testing.assert_allclose(np.bincount(firsts[:, 0], minlength=3) / 20_000, [0.1, 0.2, 0.7], atol=0.015)


def test_normal_gradient_is_reparameterized():
    mean = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    std = torch.full((5,), 2.0, dtype=torch.float64, requires_grad=True)
    out = torch.normal(mean, std, generator=torch.Generator().manual_seed(0))
    out.sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.ones(5))
    np.testing.assert_allclose(std.grad.numpy(), out.detach().numpy() / 2.0)


def test_inplace_sampling_respects_autograd_rules():
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.uniform_()
    with torch.no_grad():
        leaf.normal_()
    assert leaf.requires_grad and leaf.grad_fn is None


ERRORS = [
    (lambda: torch.rand(2, dtype=torch.int64), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: torch.empty(3).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda: torch.empty(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: torch.empty(3).geometric_(0), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda: torch.empty(3).log_normal_(1, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda: torch.empty(3).cauchy_(0, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: torch.normal(0.0, -1.0, (2,)), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.normal(torch.zeros(2), -1.0), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.empty(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.empty(3, dtype=torch.int64).normal_(), NotImplementedError, "not implemented for 'Long'"),
    (lambda: torch.empty(3).bernoulli_(2.0), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=2"),
    (lambda: torch.bernoulli(torch.full((2,), 2.0)), RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda: torch.multinomial(torch.ones(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda: torch.multinomial(torch.ones(3), 4), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda: torch.multinomial(torch.tensor([1.0, -1.0]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: torch.multinomial(torch.zeros(3), 1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda: torch.multinomial(torch.ones(3), 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
    (lambda: torch.multinomial(torch.ones(3, dtype=torch.int64), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda: torch.randperm(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda: torch.empty(3).random_(5, 3), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    (lambda: torch.randint(5, 3, (2,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    (lambda: torch.poisson(torch.tensor([-1.0])), RuntimeError, "invalid Poisson rate, expected rate to be non-negative"),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    make, kind, message = ERRORS[index]
    with pytest.raises(kind) as info:
        make()
    assert message in str(info.value)
    real = pytest.importorskip("torch")
    names = {"torch": real}
    with pytest.raises(kind) as expected:
        eval(make.__code__, names)
    assert message in str(expected.value)


@pytest.mark.parametrize("draw", [lambda g: torch.randn(40000, dtype=torch.complex64, generator=g),
                                  lambda g: torch.randn_like(torch.zeros(40000, dtype=torch.complex128), generator=g)])
def test_complex_normal_samples_split_the_variance(draw):
    sample = draw(torch.Generator().manual_seed(5))
    assert sample.is_complex()
    for part in (sample.real, sample.imag):
        assert abs(part.mean().item()) < 0.02 and abs(part.var().item() - 0.5) < 0.02
