"""Build the same distribution in torch and in scriptc from numpy parameters, and compare them."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from tests.torch_values import as_backend


class Draw:
    """Random float64 parameters and values from one seeded generator (one per test module)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def real(self, *shape):
        return self.rng.standard_normal(shape)

    def positive(self, *shape):
        return self.rng.random(shape) + 0.5

    def unit(self, *shape):
        return self.rng.random(shape) * 0.8 + 0.1

    def simplex(self, *shape):
        p = self.rng.random(shape) + 0.1
        return p / p.sum(-1, keepdims=True)

    def counts(self, high: int, *shape):
        return self.rng.integers(0, high + 1, shape).astype(np.float64)

    def lower_cholesky(self, *shape):
        a = self.rng.standard_normal(shape + (shape[-1],))
        return np.tril(a, -1) + np.eye(shape[-1]) * (np.abs(self.rng.standard_normal(shape)) + 0.5)[..., None]

    def positive_definite(self, *shape):
        a = self.rng.standard_normal(shape + (shape[-1],))
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])

    def corr_cholesky(self, *shape):
        c = self.positive_definite(*shape)
        d = np.sqrt(np.diagonal(c, axis1=-2, axis2=-1))
        return np.linalg.cholesky(c / d[..., :, None] / d[..., None, :])


def outcome(compute):
    """compute()'s value, or the type of the error it raised (torch raises these for what it does not do)."""
    try:
        return compute()
    except (NotImplementedError, AttributeError, ValueError) as error:
        return type(error)
    except RuntimeError:
        return RuntimeError


def assert_same_outcome(ours, theirs, what: str) -> None:
    """Both computed close values, or both raised the same kind of error."""
    if isinstance(theirs, type):
        assert ours is theirs, f"{what}: {ours!r} vs torch's {theirs.__name__}"
    else:
        assert_close(ours, theirs, what=what)


def assert_raises_as_torch(torch, make, error=ValueError) -> None:
    """make(torch) and make(scriptc) raise `error` with the same message (torch's words)."""
    with pytest.raises(error) as theirs:
        make(torch)
    with pytest.raises(error) as ours:
        make(scriptc)
    assert str(ours.value) == str(theirs.value)


def numpy_of(value):
    if hasattr(value, "detach"):
        return np.asarray(value.detach().numpy())
    return np.asarray(value)


def assert_close(ours, theirs, rtol=1e-5, atol=1e-6, what=""):
    ours, theirs = numpy_of(ours), numpy_of(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} vs {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def build(module, name: str, params: dict, **options):
    return getattr(module.distributions, name)(**as_backend(module, params), **options)


__all__ = ["Draw", "as_backend", "assert_close", "assert_raises_as_torch", "assert_same_outcome", "build",
           "numpy_of", "outcome", "scriptc"]
