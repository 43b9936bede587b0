"""Library-backed ops: matmul and linear (BLAS), convolution and pooling, normalizations, losses."""

from __future__ import annotations

import math

from scriptc.errors import ArgumentError, ShapeError
from scriptc.types import TensorType, from_numpy_dtype

from . import register
from .factored import FactoredGradient
from .rules import (check_conv_channels, check_per_channel, conv_out, cpp_type_name, expand, is_known, matmul_shape,
                    scalar_type_name)
from .schema import LAYER_NORM, OPAQUE, FusionTail


# torch's words for mixed dtypes, by kernel: (C++ names or scalar type names, message)
_MIXED_DTYPES = {"matmul": (cpp_type_name, "expected m1 and m2 to have the same dtype, but got: {} != {}"),
                 "addmm": (scalar_type_name, "mat1 and mat2 must have the same dtype, but got {} and {}"),
                 "conv": (scalar_type_name, "expected scalar type {} but found {}")}


def _same_dtype(a, b, kernel: str):
    if a.dtype != b.dtype:
        name, message = _MIXED_DTYPES[kernel]
        raise RuntimeError(message.format(name(from_numpy_dtype(a.dtype)), name(from_numpy_dtype(b.dtype))))


def _matmul_kernel(xp, a, b):
    # Shape errors surface as numpy's ValueError, which dispatch rewrites through matmul's shape rule.
    if a.dtype != b.dtype:
        _same_dtype(a, b, "matmul")
    return xp.asarray(xp.matmul(a, b))


def _matmul_grad(ctx, g):
    xp, a, b = ctx.xp, ctx.self, ctx.other
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = xp.expand_dims(g2, -2)
    if b.ndim == 1:
        g2 = xp.expand_dims(g2, -1)
    ga = xp.matmul(g2, xp.swapaxes(b2, -1, -2))
    gb = xp.matmul(xp.swapaxes(a2, -1, -2), g2)
    if a.ndim == 1:
        ga = ga[..., 0, :]
    if b.ndim == 1:
        gb = gb[..., :, 0]
    return ga, gb


def _matmul_rule(a, b):
    return TensorType(a.dtype, matmul_shape(a.shape, b.shape), a.device)


register("matmul(self: Tensor, other: Tensor) -> Tensor", OPAQUE, _matmul_kernel, shape=_matmul_rule,
         grad=_matmul_grad, save=("self", "other"), saved_for={"self": ("other",), "other": ("self",)},
         fusion_head=True, grad_fn_name=lambda ctx: "MmBackward0" if ctx.self.ndim == ctx.other.ndim == 2 else None,
         doc="Matrix product with numpy/PyTorch broadcasting.")


def _checked_rank(rank, name):
    def kernel(xp, a, b):
        if a.ndim != rank or b.ndim != rank:
            raise RuntimeError(f"{name}: expected {rank}D tensors, but got {a.ndim}D and {b.ndim}D")
        if rank == 3 and a.shape[0] != b.shape[0]:
            raise ShapeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                             f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
        return _matmul_kernel(xp, a, b)
    return kernel


register("mm(self: Tensor, mat2: Tensor) -> Tensor", OPAQUE, _checked_rank(2, "mm"),
         shape=_matmul_rule, grad=lambda ctx, g: (g @ ctx.mat2.T, ctx.self.T @ g), save=("self", "mat2"),
         saved_for={"self": ("mat2",), "mat2": ("self",)})
register("bmm(self: Tensor, mat2: Tensor) -> Tensor", OPAQUE, _checked_rank(3, "bmm"), shape=_matmul_rule,
         grad=lambda ctx, g: (g @ ctx.xp.swapaxes(ctx.mat2, 1, 2), ctx.xp.swapaxes(ctx.self, 1, 2) @ g),
         save=("self", "mat2"), saved_for={"self": ("mat2",), "mat2": ("self",)})


def _linear_kernel(xp, x, w, b=None):
    if x.ndim == 0 or w.ndim not in (1, 2) or x.shape[-1] != w.shape[-1]:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied "
                         f"({x.shape[0] if x.ndim > 1 else 1}x{x.shape[-1] if x.ndim else 1} and "
                         f"{'x'.join(map(str, reversed(w.shape)))})")
    _same_dtype(x, w, "matmul" if b is None else "addmm")
    if x.ndim == 2 and w.ndim == 2 and 4 * x.shape[0] <= w.shape[0]:
        # few rows times a tall weight (a recurrent step): BLAS is faster as w @ x^T than with w transposed
        out = xp.ascontiguousarray(xp.matmul(w, x.T).T)
    else:
        out = xp.matmul(x, w.T)
    if b is not None:
        out += b
    return xp.asarray(out)


def _linear_grad(ctx, g):
    xp, x, w = ctx.xp, ctx.input, ctx.weight
    gx = xp.matmul(g, w) if w.ndim == 2 else xp.multiply.outer(g, w)
    x2 = x.reshape(-1, x.shape[-1])
    g2 = g.reshape(-1, w.shape[0]) if w.ndim == 2 else g.reshape(-1)
    if w.ndim == 1:
        gw = g2 @ x2
    elif g2.dtype.kind == "f" and g2.dtype == x2.dtype:
        # g2.T @ x2, multiplied by autograd together with the other calls' (a recurrence's steps)
        gw = FactoredGradient(xp, g2, x2)
    else:
        gw = g2.T @ x2
    gb = g2.sum(axis=0) if ctx.bias is not None else None
    return gx, gw, gb


def _linear_rule(x, w, b=None):
    if x.shape is None or w.shape is None:
        return TensorType(x.dtype, None, x.device)
    if isinstance(x.shape[-1], int) and isinstance(w.shape[-1], int) and x.shape[-1] != w.shape[-1]:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[-1]} and {w.shape[-1]})")
    return TensorType(x.dtype, tuple(x.shape[:-1]) + (tuple(w.shape[:1]) if len(w.shape) == 2 else ()), x.device)


register("linear(input: Tensor, weight: Tensor, bias: Tensor? = None) -> Tensor", OPAQUE, _linear_kernel,
         shape=_linear_rule, grad=_linear_grad, save=("input", "weight"),
         saved_for={"input": ("weight",), "weight": ("input",)}, method=False, functional=True, fusion_head=True,
         grad_fn_name=lambda ctx: None if ctx.input.ndim != 2 else "MmBackward0" if ctx.bias is None else "AddmmBackward0",
         doc="input @ weight.T + bias.")


# --- convolution -------------------------------------------------------------

def _conv_params(x, w, stride, padding, dilation, groups):
    if x.ndim != 4:
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(x.shape)}")
    if w.ndim != 4:
        raise RuntimeError(f"weight should have 4 dimensions, got {w.ndim}")
    sh, sw = expand(stride, 2, "stride")
    dh, dw = expand(dilation, 2, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            ph = pw = 0
        elif padding == "same":
            if (sh, sw) != (1, 1):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            ph, pw = dh * (w.shape[2] - 1) // 2, dw * (w.shape[3] - 1) // 2
        else:
            raise RuntimeError(f"Invalid padding string '{padding}'")
    else:
        ph, pw = expand(padding, 2)
    check_conv_channels(x.shape, w.shape, groups, 2)
    if w.shape[0] % groups:
        raise RuntimeError("out_channels must be divisible by groups")
    oh = conv_out(x.shape[2], w.shape[2], sh, ph, dh)
    ow = conv_out(x.shape[3], w.shape[3], sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"Calculated output size: ({w.shape[0]}x{max(oh, 0)}x{max(ow, 0)}). Output size is too "
                         f"small (input {list(x.shape)}, kernel {list(w.shape[2:])})")
    return sh, sw, ph, pw, dh, dw, oh, ow


def _same_as_symmetric(xp, x, w, stride, padding, dilation):
    """padding='same' with an even reach pads one more after than before (as torch): that one is
    added to x here, so the rest is symmetric padding. Returns (x, padding)."""
    if padding != "same" or x.ndim != 4 or w.ndim != 4 or expand(stride, 2, "stride") != (1, 1):
        return x, padding
    from .conv import same_padding
    pads = same_padding(w.shape[2:], expand(dilation, 2, "dilation"))
    extra = [hi - lo for lo, hi in pads]
    if any(extra):
        x = xp.pad(x, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
    return x, [lo for lo, _ in pads]


def _windows(xp, xpad, kh, kw, sh, sw, dh, dw, oh, ow):
    """Strided views of every kernel window: (N, C, OH, OW, KH, KW), no copy."""
    n, c = xpad.shape[:2]
    s = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (n, c, oh, ow, kh, kw), (s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw), writeable=False)


def _pad2d(xp, x, ph, pw, value=0.0, extra_h=0, extra_w=0):
    if not (ph or pw or extra_h or extra_w):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph + extra_h), (pw, pw + extra_w)), constant_values=value)


def _unbatched(kernel):
    """Accept (C, H, W) as PyTorch does, by adding and removing a batch dim."""
    def wrapped(xp, x, *args, **options):
        if x.ndim == 3:
            out = kernel(xp, x[None], *args, **options)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return kernel(xp, x, *args, **options)
    return wrapped


def _im2col(xp, x, w, sh, sw, ph, pw, dh, dw, oh, ow, groups):
    """(N, G, Cg*KH*KW, OH*OW): each image's columns in the order that makes W @ cols come out NCHW."""
    n, c = x.shape[:2]
    kh, kw = w.shape[2:]
    win = _windows(xp, _pad2d(xp, x, ph, pw), kh, kw, sh, sw, dh, dw, oh, ow).transpose(0, 1, 4, 5, 2, 3)
    return xp.ascontiguousarray(win).reshape(n, groups, (c // groups) * kh * kw, oh * ow)


def _conv2d_kernel(xp, x, w, b=None, stride=1, padding=0, dilation=1, groups=1, im2col=None, column_bytes=None,
                   run_slices=None, matmul=None, floor=None):
    # `im2col`: a faster one with _im2col's arguments and result, or None where it has none (a
    # backend's compiled loop: native/heads.py). `matmul(weights, cols, out, bias, floor)`:
    # likewise for the products below, the bias added to them and the floor, returning None where
    # it has none.
    # `floor`: when given, the result is xp.maximum(conv2d, floor): the ReLU (0) a backend fuses into
    # the products, which write it while their results are still in registers.
    # `column_bytes`: when given, the images go through im2col and their GEMMs a few at a time, as
    # many as make that many bytes of columns: columns that stay in cache, where a whole batch's are
    # written out to memory and read back (a 16-image batch's 19 MB, for a 3x3 conv of 32 channels
    # over 32x32 outputs).
    # `run_slices(fn, n)`: when given, calls fn(start, end) over slices of the batch side by side.
    _same_dtype(x, w, "conv")
    x, padding = _same_as_symmetric(xp, x, w, stride, padding, dilation)
    sh, sw, ph, pw, dh, dw, oh, ow = _conv_params(x, w, stride, padding, dilation, groups)
    n, o = x.shape[0], w.shape[0]
    wmat = w.reshape(groups, o // groups, -1)
    image_bytes = wmat.shape[-1] * groups * oh * ow * x.dtype.itemsize
    step = max(1, n if column_bytes is None else column_bytes // max(image_bytes, 1))
    out = xp.empty((n, o, oh, ow), dtype=xp.result_type(x, w))

    def images(first: int, end: int) -> None:
        for start in range(first, end, step):
            part = x[start:min(start + step, end)]
            cols = im2col(xp, part, w, sh, sw, ph, pw, dh, dw, oh, ow, groups) if im2col is not None else None
            if cols is None:
                cols = _im2col(xp, part, w, sh, sw, ph, pw, dh, dw, oh, ow, groups)
            # (G, O/G, K) @ (N, G, K, OH*OW): one GEMM per image and group, written straight into NCHW
            # order (the (N*OH*OW, K) @ (K, O) form needs a transposing copy of the output after it).
            target = out[start:start + len(part)].reshape(-1, groups, o // groups, oh * ow)
            if matmul is None or matmul(wmat, cols, target, b, floor) is None:
                xp.matmul(wmat, cols, out=target)
                if b is not None:
                    target += b.reshape(1, groups, -1, 1)
                if floor is not None:
                    xp.maximum(target, floor, out=target)

    if run_slices is None:
        images(0, n)
    else:
        run_slices(images, n)
    return out


def _conv2d_grad(ctx, g):
    xp, x, w = ctx.xp, ctx.input, ctx.weight
    batched = x.ndim == 4
    if not batched:
        x, g = x[None], g[None]
    groups = ctx.groups
    h_in, w_in = x.shape[2:]
    x, padding = _same_as_symmetric(xp, x, w, ctx.stride, ctx.padding, ctx.dilation)
    sh, sw, ph, pw, dh, dw, oh, ow = _conv_params(x, w, ctx.stride, padding, ctx.dilation, groups)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    gmat = g.reshape(n, groups, o // groups, oh * ow)
    cols = _im2col(xp, x, w, sh, sw, ph, pw, dh, dw, oh, ow, groups)
    gw = xp.matmul(gmat, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(o, cg, kh, kw)
    wmat = w.reshape(groups, o // groups, cg * kh * kw)
    gcols = xp.matmul(wmat.transpose(0, 2, 1), gmat).reshape(n, c, kh, kw, oh, ow)
    gpad = xp.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            gpad[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += gcols[:, :, i, j]
    gx = gpad[:, :, ph:ph + h_in, pw:pw + w_in]
    gb = g.sum(axis=(0, 2, 3)) if ctx.bias is not None else None
    return (gx if batched else gx[0]), gw, gb, None, None, None, None


def _conv2d_rule(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    dtype = x.dtype if x.dtype is not None else w.dtype  # (the kernel refuses an input of another dtype)
    if x.shape is None or w.shape is None or not all(map(is_known, (stride, padding, dilation))):
        return TensorType(dtype, None, x.device)
    if len(x.shape) not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(x.shape)}")
    check_conv_channels(x.shape, w.shape, groups, 2)
    batched = len(x.shape) == 4
    n = x.shape[0] if batched else None
    h, wd = x.shape[-2:]
    sh, sw = expand(stride, 2, "stride")
    dh, dw = expand(dilation, 2, "dilation")
    if padding == "same":
        shape = (w.shape[0], h, wd)
    else:
        ph, pw = expand(padding, 2) if not isinstance(padding, str) else (0, 0)
        shape = (w.shape[0], conv_out(h, w.shape[2], sh, ph, dh), conv_out(wd, w.shape[3], sw, pw, dw))
    return TensorType(dtype, ((n,) + shape) if batched else shape, x.device)


register("conv2d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[] = [1, 1], "
         "padding: int[]|str = [0, 0], dilation: int[] = [1, 1], groups: int = 1) -> Tensor", OPAQUE,
         _unbatched(_conv2d_kernel), shape=_conv2d_rule, grad=_conv2d_grad, save=("input", "weight"),
         keeps_layout=True,
         method=False, functional=True, fusion_head=True, head_floor=True,
         doc="2-D convolution (cross-correlation) as im2col + GEMM.")


# --- normalization -----------------------------------------------------------

def _channel_shape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def _batch_norm_kernel(xp, x, running_mean, running_var, weight=None, bias=None, training=False,
                       momentum=0.1, eps=1e-5):
    if x.ndim < 2:
        raise ArgumentError(f"expected 2D or higher input (got {x.ndim}D input)")
    axes = (0,) + tuple(range(2, x.ndim))
    shape = _channel_shape(x)
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.shape != (c,):
            raise ShapeError(f"{name} should contain {c} elements not {t.size}")
    if x.size == 0:
        # an empty batch, as torch: itself, the running statistics left alone
        nothing = xp.zeros(c, dtype=x.dtype)
        return x.copy(), (nothing, nothing)
    if training:
        count = x.size // c
        if count == 1:
            raise ArgumentError(f"Expected more than 1 value per channel when training, got input size "
                                f"torch.Size({list(x.shape)})")
        mean = x.mean(axis=axes)
        var = x.var(axis=axes)
        if running_mean is not None:
            running_mean *= 1 - momentum
            running_mean += momentum * mean
        if running_var is not None:
            running_var *= 1 - momentum
            running_var += momentum * var * (count / (count - 1))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean, running_var
    invstd = 1 / xp.sqrt(var + eps)
    scale = invstd if weight is None else invstd * weight
    out = (x - mean.reshape(shape)) * scale.reshape(shape).astype(x.dtype, copy=False)
    if bias is not None:
        out += bias.reshape(shape)
    return out.astype(x.dtype, copy=False), (mean, invstd)


def _batch_norm_grad(ctx, g):
    x, w = ctx.input, ctx.weight
    mean, invstd = ctx.aux
    shape = _channel_shape(x)
    axes = (0,) + tuple(range(2, x.ndim))
    gw_scale = invstd if w is None else invstd * w
    gb = g.sum(axis=axes) if ctx.bias is not None else None
    xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    gw = (g * xhat).sum(axis=axes) if w is not None else None
    if ctx.training and x.size:
        n = x.size // x.shape[1]
        gx = (gw_scale.reshape(shape) / n) * (n * g - g.sum(axis=axes).reshape(shape)
                                              - xhat * (g * xhat).sum(axis=axes).reshape(shape))
    else:
        gx = g * gw_scale.reshape(shape)
    return gx, None, None, gw, gb, None, None, None


def _batch_norm_rule(x, running_mean=None, running_var=None, weight=None, bias=None, *rest):
    check_per_channel(x, "{name} should contain {channels} elements not {size}", running_mean=running_mean,
                      running_var=running_var, weight=weight, bias=bias)
    return x


register("batch_norm(input: Tensor, running_mean: Tensor?, running_var: Tensor?, weight: Tensor? = None, "
         "bias: Tensor? = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-05) -> Tensor",
         OPAQUE, _batch_norm_kernel, shape=_batch_norm_rule, grad=_batch_norm_grad, aux=True,
         save=("input",), mutates=("running_mean", "running_var"), mutates_when="training", method=False,
         functional=True, doc="Batch normalization; in training mode updates running_mean/var in place.")


def _norm_axes(x, normalized_shape):
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape) or k > x.ndim:
        raise ShapeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                         f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(x.shape)}")
    return tuple(range(x.ndim - k, x.ndim))


def _layer_norm_kernel(xp, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = _norm_axes(x, normalized_shape)
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    rstd = 1 / xp.sqrt((centered * centered).mean(axis=axes, keepdims=True) + eps)
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.astype(x.dtype, copy=False), (mean, rstd)


def _layer_norm_grad(ctx, g):
    x, w = ctx.input, ctx.weight
    axes = _norm_axes(x, ctx.normalized_shape)
    mean, rstd = ctx.aux
    xhat = (x - mean) * rstd
    lead = tuple(range(x.ndim - len(axes)))
    gw = (g * xhat).sum(axis=lead) if w is not None else None
    gb = g.sum(axis=lead) if ctx.bias is not None else None
    gxhat = g * w if w is not None else g
    n = math.prod(x.shape[a] for a in axes)
    gx = rstd / n * (n * gxhat - gxhat.sum(axis=axes, keepdims=True)
                     - xhat * (gxhat * xhat).sum(axis=axes, keepdims=True))
    return gx, None, gw, gb, None


def _layer_norm_rule(x, normalized_shape, *rest):
    if x.shape is not None and is_known(normalized_shape) and len(normalized_shape) <= len(x.shape):
        trailing = x.shape[len(x.shape) - len(normalized_shape):]
        if any(isinstance(d, int) and d != n for d, n in zip(trailing, normalized_shape)):
            raise ShapeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                             f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(x.shape)}")
    return x


register("layer_norm(input: Tensor, normalized_shape: int[], weight: Tensor? = None, bias: Tensor? = None, "
         "eps: float = 1e-05) -> Tensor", OPAQUE, _layer_norm_kernel, shape=_layer_norm_rule,
         grad=_layer_norm_grad, aux=True, save=("input",), method=False, functional=True,
         fusion_tail=FusionTail(LAYER_NORM), grad_fn_name="NativeLayerNormBackward0",
         doc="Normalizes over the last len(normalized_shape) dims.")
