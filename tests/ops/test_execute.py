"""Running an op's kernel: operands that are all Python scalars take torch's promoted dtype (the
default float for floats), not numpy's float64."""

from __future__ import annotations

import pytest

import scriptc as torch


def _choices(x):
    return (torch.where(x > 0.5, 1.0, 0.0), torch.where(x > 0.5, 1, 0), torch.where(x > 0.5, True, False),
            torch.where(x > 0.5, x, 0.0), torch.where(x > 0.5, 2, x.double()))


@pytest.mark.parametrize("run, bools", [(_choices, torch.bool), (torch.jit.script(_choices), torch.int64)],
                         ids=["eager", "scripted"])
def test_where_between_python_scalars_gives_the_promoted_dtype(run, bools):
    # (real torch.jit.script passes True and False to where's Scalars as the ints 1 and 0)
    x = torch.tensor([0.2, 0.7])
    dtypes = [t.dtype for t in run(x)]
    assert dtypes == [torch.float32, torch.int64, bools, torch.float32, torch.float64]
    assert run(x)[0].tolist() == [0.0, 1.0]


def test_where_between_python_floats_follows_the_default_dtype():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.where(torch.tensor([True]), 1.0, 0.0).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
