"""Build the same distribution in torch and in scriptc from numpy parameters, and compare them."""

from __future__ import annotations

import numpy as np

import scriptc
from tests.torch_values import as_backend


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


def scriptc_message(torch_message: str) -> str:
    """torch's message as scriptc words it (its Size and tensor type names)."""
    return torch_message.replace("torch.Size", "scriptc.Size")


__all__ = ["as_backend", "assert_close", "build", "numpy_of", "scriptc", "scriptc_message"]
