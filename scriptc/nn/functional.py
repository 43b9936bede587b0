"""scriptc.nn.functional: PyTorch's functional API, each function a call of one op-table op
(or a short composition of them, like scaled_dot_product_attention)."""

from __future__ import annotations

import warnings

from scriptc.ops import OPS
from scriptc.tensors import Tensor, call, call_inplace


def _op(name, *args):
    return call(OPS[name], args)


def _activation(name, input, inplace, *extra):
    op = OPS[name]
    if inplace:
        return call_inplace(op.inplace, (input,) + extra)
    return call(op, (input,) + extra)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation("relu", input, inplace)


def relu_(input: Tensor) -> Tensor:
    return _activation("relu", input, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return _op("gelu", input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation("silu", input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _op("sigmoid", input)


def tanh(input: Tensor) -> Tensor:
    return _op("tanh", input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _activation("leaky_relu", input, inplace, negative_slope)


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("softmax", input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("log_softmax", input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _op("dropout", input, p, training)
    return input.copy_(out) if inplace else out


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return _op("linear", input, weight, bias)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    return _op("conv2d", input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    if return_indices:
        raise NotImplementedError("max_pool2d(return_indices=True) is not supported by scriptc")
    return _op("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    return _op("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    return _op("adaptive_avg_pool2d", input, output_size)


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return _op("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _op("layer_norm", input, shape, weight, bias, eps)


# The families composed of ops live in scriptc.nn.functions; they are part of this namespace.
from .functions.attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401
from .functions.attention import _canonical_mask  # noqa: E402,F401
from .functions.distance import cosine_similarity, pairwise_distance, pdist  # noqa: E402,F401
from .functions.linear import bilinear  # noqa: E402,F401
from .functions.loss import (  # noqa: E402,F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .functions.sparse import embedding, embedding_bag, one_hot  # noqa: E402,F401
