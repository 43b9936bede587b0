"""F.linear and F.bilinear (y = x1^T A x2 + b, as one matmul over the flattened batch)."""

from __future__ import annotations

from typing import Optional

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["linear", "bilinear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return _op("linear", input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """out[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    if input1.shape[:-1] != input2.shape[:-1]:
        for dim, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
            if a != b:
                raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: got {a} and {b}")
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    out_features, in1, in2 = weight.shape
    if input1.size(-1) != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.size(-1)} but expected "
                           f"{in1}")
    if input2.size(-1) != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.size(-1)} but expected "
                           f"{in2}")
    lead = list(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (N, in1) @ (in1, out * in2) -> (N, out, in2), then contract in2 with x2
    mixed = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    out = (mixed * x2.unsqueeze(1)).sum(2)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + [out_features])
