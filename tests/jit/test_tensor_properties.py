"""Every public property of a tensor reads the same in scripted code as in eager code, as torch's
TorchScript guarantees (dtype and layout aside: script has no such values to compare)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import scriptc as torch

SKIPPED = {"grad_fn", "output_nr", "names", "was_wrapped_number", "grad_dtype", "dtype", "layout", "imag",
           "real"}


def _properties(tensor) -> list:
    names = []
    for name in dir(tensor):
        if name.startswith("_") or name in SKIPPED:
            continue
        try:
            value = getattr(tensor, name)
        except RuntimeError:
            continue
        if not inspect.isroutine(value):
            names.append(name)
    return names


@pytest.mark.parametrize("name", _properties(torch.arange(4.0).view(2, 2)))
def test_a_tensor_property_reads_the_same_in_script(name):
    tensor = torch.arange(4.0).view(2, 2)
    unit = torch.jit.CompilationUnit(f"def read(x):\n    return x.{name}\n")
    got, expected = unit.read(tensor), getattr(tensor, name)
    if isinstance(expected, torch.Tensor):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    elif isinstance(expected, tuple):  # (Tensor.shape: script's is a List[int])
        assert list(got) == list(expected)
    else:
        assert got == expected and type(got) is type(expected)
