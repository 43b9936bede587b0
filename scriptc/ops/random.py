"""Random ops: samples drawn from a Generator (`generator=`, the default one when None).

The in-place samplers (uniform_, normal_, bernoulli_, exponential_, random_, ...) are
the in-place variants of pure ops that draw a fresh tensor shaped like self; their
pure forms are not public (torch has none) but are what traced graphs record.
"""

from __future__ import annotations

from scriptc.errors import ArgumentError
from scriptc.types import TensorType, default_float, int64

from . import register
from .factory import _size, with_layout
from .generator import generator
from .matrix import torch_name
from .rules import is_known, same_as, scalar_type_name
from .schema import RANDOM
from .special import quiet_float_errors, standard_gamma_grad

_GEN = "*, generator: Generator? = None"
_FACTORY = _GEN + ", dtype: ScalarType? = None, device: Device? = None"
_SIZED = "size: int[], " + _FACTORY
_LIKE = "self: Tensor, " + _FACTORY + ", memory_format: int? = None"


def _floating(dtype, kernel_name: str):
    """dtype (the default dtype when None) as numpy's; torch's NotImplementedError for an integer dtype."""
    d = dtype or default_float()
    if not d.is_floating_point:
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{scalar_type_name(d)}'")
    return d.np


def _sized_rule(default=None):
    def rule(size, generator=None, dtype=None, *rest):
        return TensorType(dtype or default or default_float(), tuple(size) if is_known(size) else None)
    return rule


def _like_rule(x, generator=None, dtype=None, *rest):
    return TensorType(dtype if dtype is not None else x.dtype, x.shape, x.device)


register(f"rand({_SIZED}) -> Tensor", RANDOM, lambda xp, size, gen=None, dtype=None, device=None:
         generator(xp, gen).random(_size(size)).astype(_floating(dtype, "check_uniform_bounds")),
         shape=_sized_rule(), method=False, doc="Uniform samples in [0, 1).")
def _standard_normal(xp, gen, shape, dtype):
    """Standard normal samples; a complex dtype gets real and imaginary parts of variance 1/2 each (as torch)."""
    if dtype is not None and dtype.is_complex:
        parts = generator(xp, gen).standard_normal(tuple(shape) + (2,)) * (0.5 ** 0.5)
        return (parts[..., 0] + 1j * parts[..., 1]).astype(dtype.np)
    return generator(xp, gen).standard_normal(shape).astype(_floating(dtype, "normal_kernel_cpu"))


register(f"randn({_SIZED}) -> Tensor", RANDOM, lambda xp, size, gen=None, dtype=None, device=None:
         _standard_normal(xp, gen, _size(size), dtype),
         shape=_sized_rule(), method=False, doc="Standard normal samples.")
register(f"rand_like({_LIKE}) -> Tensor", RANDOM, lambda xp, x, gen=None, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, generator(xp, gen).random(x.shape).astype(
             _floating(dtype or _dtype_of(x), "check_uniform_bounds"))),
         shape=_like_rule, method=False, doc="Uniform samples in [0, 1) shaped like self.")
register(f"randn_like({_LIKE}) -> Tensor", RANDOM, lambda xp, x, gen=None, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, _standard_normal(xp, gen, x.shape, dtype or _dtype_of(x))),
         shape=_like_rule, method=False, doc="Standard normal samples shaped like self.")


def _dtype_of(x):
    from scriptc.types import from_numpy_dtype
    return from_numpy_dtype(x.dtype)


def _integers(xp, gen, low, high, shape, np_dtype):
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return generator(xp, gen).integers(low, high, shape).astype(np_dtype)


register(f"randint(high: int, {_SIZED}) -> Tensor", RANDOM,
         lambda xp, high, size, gen=None, dtype=None, device=None:
         _integers(xp, gen, 0, high, _size(size), (dtype or int64).np),
         shape=lambda high, size, *rest: _sized_rule(int64)(size, *rest), method=False,
         doc="Integers uniform in [0, high).")
register(f"randint.low(low: int, high: int, {_SIZED}) -> Tensor", RANDOM,
         lambda xp, low, high, size, gen=None, dtype=None, device=None:
         _integers(xp, gen, low, high, _size(size), (dtype or int64).np),
         shape=lambda low, high, size, *rest: _sized_rule(int64)(size, *rest), method=False,
         doc="Integers uniform in [low, high).")
register(f"randint_like(self: Tensor, high: int, {_FACTORY}, memory_format: int? = None) -> Tensor", RANDOM,
         lambda xp, x, high, gen=None, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, _integers(xp, gen, 0, high, x.shape, dtype.np if dtype else x.dtype)),
         shape=lambda x, high, *rest: _like_rule(x, *rest), method=False,
         doc="Integers uniform in [0, high) shaped like self.")
register(f"randint_like.low(self: Tensor, low: int, high: int, {_FACTORY}, memory_format: int? = None) -> Tensor",
         RANDOM, lambda xp, x, low, high, gen=None, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, _integers(xp, gen, low, high, x.shape, dtype.np if dtype else x.dtype)),
         shape=lambda x, low, high, *rest: _like_rule(x, *rest), method=False)


def _randperm_kernel(xp, n, gen=None, dtype=None, device=None):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return generator(xp, gen).permutation(n).astype((dtype or int64).np)


register("randperm(n: int, *, generator: Generator? = None, dtype: ScalarType? = None, device: Device? = None) "
         "-> Tensor", RANDOM, _randperm_kernel,
         shape=lambda n, generator=None, dtype=None, device=None: TensorType(
             dtype or int64, (n,) if is_known(n) else (None,)),
         method=False, doc="A random permutation of 0..n-1 (int64).")


# --- normal, with the reparameterized gradient torch gives it ---------------------------------------

def _check_std(std):
    low = std if isinstance(std, (int, float)) else (std.min() if std.size else 0)
    if low < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(low)}")


def _fmt(value) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _normal_kernel(xp, mean, std, gen=None):
    _check_std(std)
    shape = xp.broadcast_shapes(getattr(mean, "shape", ()), getattr(std, "shape", ()))
    dtype = xp.result_type(*(a for a in (mean, std) if not isinstance(a, (int, float))))
    noise = generator(xp, gen).standard_normal(shape)
    return (mean + std * noise).astype(dtype, copy=False)


def _normal_grad(ctx, g):
    xp = ctx.xp
    d_std = None
    if not isinstance(ctx.std, (int, float)):
        safe = xp.where(ctx.std == 0, 1, ctx.std)
        d_std = xp.where(ctx.std == 0, 0, g * (ctx.out - ctx.mean) / safe)
    return (g, d_std, None)


def _normal_rule(mean, std, *rest):
    tensors = [a for a in (mean, std) if isinstance(a, TensorType)]
    from .rules import broadcast_shapes
    return TensorType(tensors[0].dtype, broadcast_shapes(*(t.shape for t in tensors)), tensors[0].device)


for _mean, _std in (("Tensor", "Tensor"), ("Tensor", "float = 1.0"), ("float", "Tensor")):
    register(f"normal.{_mean}_{_std.split()[0]}(mean: {_mean}, std: {_std}, {_GEN}) -> Tensor", RANDOM,
             _normal_kernel, shape=_normal_rule, grad=_normal_grad, save=("mean", "std", "out"), method=False,
             doc="Normal samples with elementwise mean and std (broadcast).")


def _normal_sized_kernel(xp, mean, std, size, gen=None, dtype=None, device=None):
    _check_std(std)
    np_dtype = _floating(dtype, "normal_kernel_cpu")
    return generator(xp, gen).normal(mean, std, _size(size)).astype(np_dtype)


register("normal.float_float(mean: float, std: float, size: int[], *, generator: Generator? = None, "
         "dtype: ScalarType? = None, device: Device? = None) -> Tensor", RANDOM, _normal_sized_kernel,
         shape=lambda mean, std, size, *rest: _sized_rule()(size, *rest), method=False,
         doc="Normal samples of the given size.")


# --- the pure forms of the in-place samplers ---------------------------------------------------------

def _like(op_name, sample, check=None, integer_ok=False, doc=""):
    """Declare `op_name` (draws a tensor shaped like self) and its public in-place form `op_name_`."""
    def kernel(xp, x, *args):
        *params, gen = args
        if check is not None:
            check(*params)
        if not integer_ok:
            _floating(_dtype_of(x), f"{op_name}_kernel" if op_name != "uniform" else "check_uniform_bounds")
        return xp.asarray(sample(generator(xp, gen), x, *params)).astype(x.dtype, copy=False)
    return kernel


def _check_uniform(low, high):
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_fmt(low)} > to={_fmt(high)}")


def _check_positive(what, name):
    def check(value, *rest):
        if not value > 0:
            raise RuntimeError(f"{what} expects {name} > 0.0, but found {name}={_fmt(value)}")
    return check


def _check_geometric(p):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")


def _check_log_normal(mean, std):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")


def _check_cauchy(median, sigma):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")


def _inplace_sampler(schema_args, op_name, sample, check=None, integer_ok=False, doc=""):
    register(f"{op_name}(self: Tensor{schema_args}, {_GEN}) -> Tensor", RANDOM,
             _like(op_name, sample, check, integer_ok), shape=same_as(0), method=False, function=False,
             inplace=True, doc=doc)


_inplace_sampler(", from: float = 0.0, to: float = 1.0", "uniform",
                 lambda rng, x, low, high: rng.uniform(low, high, x.shape), _check_uniform,
                 doc="Fills self with uniform samples in [from, to).")
_inplace_sampler(", lambd: float = 1.0", "exponential",
                 lambda rng, x, rate: rng.exponential(1.0 / rate, x.shape),
                 _check_positive("exponential_", "lambda"), doc="Fills self with exponential samples of rate lambd.")
_inplace_sampler(", p: float", "geometric", lambda rng, x, p: rng.geometric(p, x.shape), _check_geometric,
                 integer_ok=True, doc="Fills self with the number of Bernoulli(p) trials up to the first success.")
_inplace_sampler(", mean: float = 1.0, std: float = 2.0", "log_normal",
                 lambda rng, x, mean, std: rng.lognormal(mean, std, x.shape), _check_log_normal,
                 doc="Fills self with exp(N(mean, std)) samples.")
_inplace_sampler(", median: float = 0.0, sigma: float = 1.0", "cauchy",
                 lambda rng, x, median, sigma: median + sigma * rng.standard_cauchy(x.shape), _check_cauchy,
                 doc="Fills self with Cauchy samples.")


def _normal_like(rng, x, mean, std):
    _check_std(std)
    return rng.normal(mean, std, x.shape)


register(f"normal.like(self: Tensor, mean: float = 0.0, std: float = 1.0, {_GEN}) -> Tensor", RANDOM,
         _like("normal", _normal_like), shape=same_as(0), method=False, function=False, inplace=True,
         doc="Fills self with normal samples.")


# random_: integers in [from, to), with torch's defaults bounded by self's dtype.
def _dtype_span(xp, dtype) -> int:
    """One past the largest integer `random_()` draws for a dtype: every value it represents exactly."""
    if dtype.kind == "f":
        return (1 << (xp.finfo(dtype).nmant + 1)) + 1
    if dtype.kind == "b":
        return 2
    return int(xp.iinfo(dtype).max) + 1


def _random_kernel(xp, x, low=0, high=None, gen=None):
    if high is None:
        high = _dtype_span(xp, x.dtype)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return generator(xp, gen).integers(low, high, x.shape, dtype=xp.int64).astype(x.dtype)


register(f"random(self: Tensor, {_GEN}) -> Tensor", RANDOM, lambda xp, x, gen=None: _random_kernel(xp, x, 0, None, gen),
         shape=same_as(0), method=False, function=False, inplace=True,
         doc="Fills self with integers uniform over what self's dtype holds exactly (from 0).")
register(f"random.to(self: Tensor, to: int, {_GEN}) -> Tensor", RANDOM,
         lambda xp, x, high, gen=None: _random_kernel(xp, x, 0, high, gen),
         shape=same_as(0), method=False, function=False, inplace=True, doc="Fills self with integers in [0, to).")
register(f"random.from(self: Tensor, from: int, to: int?, {_GEN}) -> Tensor", RANDOM, _random_kernel,
         shape=same_as(0), method=False, function=False, inplace=True, doc="Fills self with integers in [from, to).")


# --- bernoulli, multinomial, poisson, gamma ----------------------------------------------------------

def _check_probabilities(p):
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _bernoulli_kernel(xp, p, gen=None):
    _floating(_dtype_of(p), "bernoulli_tensor_cpu_p_")
    _check_probabilities(p)
    return (generator(xp, gen).random(p.shape) < p).astype(p.dtype)


def _bernoulli_fill_kernel(xp, x, p=0.5, gen=None):
    if isinstance(p, (int, float)):
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")
    else:
        _check_probabilities(p)
        xp.broadcast_shapes(p.shape, x.shape)
    return (generator(xp, gen).random(x.shape) < p).astype(x.dtype)


register(f"bernoulli(self: Tensor, {_GEN}) -> Tensor", RANDOM, _bernoulli_kernel, shape=same_as(0),
         doc="1 with probability self (elementwise), else 0, in self's dtype.")
register(f"bernoulli.p(self: Tensor, p: float, {_GEN}) -> Tensor", RANDOM,
         lambda xp, x, p, gen=None: _bernoulli_fill_kernel(xp, x, p, gen), shape=lambda x, p, *rest: x,
         doc="1 with probability p, shaped like self.")
register(f"bernoulli.fill(self: Tensor, p: Tensor|float = 0.5, {_GEN}) -> Tensor", RANDOM, _bernoulli_fill_kernel,
         shape=same_as(0), method=False, function=False, inplace=True,
         doc="Fills self with 1 with probability p (a float or a broadcastable tensor), else 0.")


def _multinomial_kernel(xp, probs, num_samples, replacement=False, gen=None):
    if probs.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{scalar_type_name(_dtype_of(probs))}")
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    categories = probs.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = probs.reshape(-1, categories).astype(xp.float64)
    if rows.size and (~xp.isfinite(rows) | (rows < 0)).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = rows.sum(axis=1, keepdims=True)
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = generator(xp, gen)
    if replacement:
        # Inverse CDF: every row's CDF shifted by its row index, so one searchsorted serves all rows.
        cdf = xp.cumsum(rows / totals, axis=1)
        cdf[:, -1] = 1.0
        offsets = xp.arange(len(rows))[:, None]
        draws = rng.random((len(rows), num_samples)) + offsets
        flat = xp.searchsorted((cdf + offsets).reshape(-1), draws.reshape(-1), side="right")
        picks = flat.reshape(len(rows), num_samples) - offsets * categories
        picks = xp.minimum(picks, categories - 1)
    else:
        # Gumbel top-k: the k largest log p + Gumbel noise are a draw without replacement.
        with quiet_float_errors(xp):
            keys = xp.log(rows) - xp.log(rng.exponential(size=rows.shape))
        picks = xp.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return picks.reshape(probs.shape[:-1] + (num_samples,)).astype(xp.int64)


register(f"multinomial(self: Tensor, num_samples: int, replacement: bool = False, {_GEN}) -> Tensor", RANDOM,
         _multinomial_kernel, shape=lambda p, n, *rest: TensorType(
             int64, None if p.shape is None else tuple(p.shape[:-1]) + (n if is_known(n) else None,), p.device),
         doc="Indices drawn from the categories of each row with weights self (with or without replacement).")


def _poisson_kernel(xp, rates, gen=None):
    if rates.size and (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return generator(xp, gen).poisson(rates).astype(rates.dtype)


register("poisson(self: Tensor, generator: Generator? = None) -> Tensor", RANDOM, _poisson_kernel,
         shape=same_as(0), method=False, doc="Poisson samples with rate self (elementwise).")


def _standard_gamma_kernel(xp, alpha, gen=None):
    _floating(_dtype_of(alpha), "_standard_gamma")
    return generator(xp, gen).standard_gamma(alpha).astype(alpha.dtype)


register("_standard_gamma(self: Tensor, generator: Generator? = None) -> Tensor", RANDOM, _standard_gamma_kernel,
         shape=same_as(0), method=False, save=("self", "out"),
         grad=lambda ctx, g: (g * standard_gamma_grad(ctx.xp, ctx.self, ctx.out), None),
         doc="Gamma(self, 1) samples (what torch.distributions.Gamma draws); differentiable in self by "
             "implicit reparameterization.")


def _binomial_kernel(xp, count, prob, gen=None):
    for name, values in (("count", count), ("prob", prob)):
        if values.dtype.kind != "f":
            raise ArgumentError(f"binomial only supports floating-point dtypes for {name}, got: "
                                f"{torch_name(values.dtype)}")
    _check_probabilities(prob)
    return generator(xp, gen).binomial(count.astype(xp.int64), prob).astype(count.dtype)


register("binomial(count: Tensor, prob: Tensor, generator: Generator? = None) -> Tensor", RANDOM, _binomial_kernel,
         shape=lambda count, prob, *rest: count, method=False,
         doc="Binomial(count, prob) samples (what torch.distributions.Binomial draws).")


def _dirichlet_kernel(xp, alpha, gen=None):
    _floating(_dtype_of(alpha), "_sample_dirichlet")
    draws = generator(xp, gen).standard_gamma(alpha.astype(xp.float64))
    total = draws.sum(axis=-1, keepdims=True)
    return xp.where(total > 0, draws / xp.where(total > 0, total, 1), 0).astype(alpha.dtype)


register("_sample_dirichlet(self: Tensor, generator: Generator? = None) -> Tensor", RANDOM, _dirichlet_kernel,
         shape=same_as(0), method=False, doc="Dirichlet(self) samples along the last dim.")
