"""Dropout ops: elements (dropout, alpha_dropout) or whole channels (dropout1d/2d/3d,
feature_alpha_dropout) zeroed at random in training; the identity otherwise.

Each kernel returns the multiplier it applied as `aux`, the whole gradient: g * multiplier.
"""

from __future__ import annotations

import math
import warnings

from scriptc.errors import ArgumentError

from . import register
from .schema import RANDOM

# alpha dropout keeps SELU's self-normalization: dropped elements take -SELU's saturation value.
SELU_SATURATION = 1.7580993408473766


def _check_p(p):
    if not 0 <= p <= 1:
        raise ArgumentError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise_shape(x, per_channel):
    return x.shape[:2] + (1,) * (x.ndim - 2) if per_channel else x.shape


def _dropout(xp, x, p, training, per_channel=False, alpha=False):
    """(output, multiplier or None): torch's _dropout_impl for the four kinds."""
    _check_p(p)
    if not training or p == 0 or x.size == 0:
        return x, None
    if p == 1:
        return xp.zeros_like(x), xp.zeros(x.shape, dtype=x.dtype)
    from .generator import generator
    keep = (generator(xp).random(_noise_shape(x, per_channel)) >= p).astype(x.dtype)
    if not alpha:
        multiplier = keep * xp.asarray(1.0 / (1 - p), dtype=x.dtype)
        return x * multiplier, multiplier
    a = 1.0 / math.sqrt((SELU_SATURATION ** 2 * p + 1) * (1 - p))
    shift = (keep - 1) * (SELU_SATURATION * a) + SELU_SATURATION * a * p
    multiplier = keep * xp.asarray(a, dtype=x.dtype)
    return (x * multiplier + shift).astype(x.dtype, copy=False), xp.broadcast_to(multiplier, x.shape)


def _feature_dropout(spatial_dims):
    """dropout1d/2d/3d: channels of (N, C, *spatial) or unbatched (C, *spatial) inputs, with torch's
    rank rules (1d refuses other ranks; 2d and 3d warn and go on; 2d takes 3-D input as (N, C, L))."""
    name = f"dropout{spatial_dims}d"

    def kernel(xp, x, p=0.5, training=True):
        _check_p(p)
        batched_rank = spatial_dims + 2
        if x.ndim not in (batched_rank - 1, batched_rank):
            if spatial_dims == 1:
                raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
                                   "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                                   "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                                   "inputs).")
            warnings.warn(f"{name}: Received a {x.ndim}-D input to {name}, which is deprecated and will result in "
                          f"an error in a future release. To retain the behavior and silence this warning, please "
                          f"use dropout instead. Note that {name} exists to provide channel-wise dropout on inputs "
                          f"with {spatial_dims} spatial dimensions, a channel dimension, and an optional batch "
                          f"dimension (i.e. {batched_rank - 1}D or {batched_rank}D inputs).", stacklevel=4)
        if spatial_dims == 2 and x.ndim == 3:
            warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                          "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
                          "dim. This behavior will change in a future release to interpret the input as one without "
                          "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                          "behavior, please switch to using dropout1d instead.", stacklevel=4)
        unbatched = spatial_dims != 2 and x.ndim == batched_rank - 1
        out, multiplier = _dropout(xp, x[None] if unbatched else x, p, training, per_channel=True)
        if unbatched:
            return out[0], None if multiplier is None else multiplier[0]
        return out, multiplier

    return kernel


def _grad(ctx, g):
    return (g if ctx.aux is None else g * ctx.aux, None, None)


def _same_shape(x, *rest):
    return x


def _channels_of_one_spatial_dim(x, *rest):
    """dropout1d's rule refuses the ranks its kernel refuses (in eval too), so a pass that drops an
    eval dropout of unknown rank keeps the error (shape_infer.accepts_every_rank)."""
    if x.shape is not None and len(x.shape) not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {len(x.shape)}D input.")
    return x


def _register(name, kernel, doc, function=True, shape=_same_shape):
    register(f"{name}(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor", RANDOM, kernel,
             shape=shape, grad=_grad, aux=True, inplace=True, method=False, function=function, doc=doc)


_register("dropout", lambda xp, x, p=0.5, training=True: _dropout(xp, x, p, training),
          "Zeroes elements with probability p in training and scales the rest by 1/(1-p).")
_register("alpha_dropout", lambda xp, x, p=0.5, training=True: _dropout(xp, x, p, training, alpha=True),
          "Dropout that keeps zero mean and unit variance (for SELU networks).")
_register("feature_alpha_dropout",
          lambda xp, x, p=0.5, training=True: _dropout(xp, x, p, training, per_channel=True, alpha=True),
          "alpha_dropout of whole channels (dim 1).")
for _dims in (1, 2, 3):
    _register(f"dropout{_dims}d", _feature_dropout(_dims), f"Zeroes whole channels of {_dims}-d feature maps.",
              function=False, shape=_channels_of_one_spatial_dim if _dims == 1 else _same_shape)
