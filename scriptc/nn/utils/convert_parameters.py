"""parameters_to_vector and vector_to_parameters (torch.nn.utils)."""

from __future__ import annotations

from typing import Iterable

from scriptc import cat
from scriptc.optim.optimizer import typename
from scriptc.tensors import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable)."""
    return cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the next slice of `vec` (viewed to its shape)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param).data
        pointer += count
