"""Which ops autocast recasts on the CPU, and the cast itself: eager dispatch's one autocast seam.

The lists are PyTorch 2.13's CPU autocast lists (ATen's autocast_mode.cpp), read off by running each
op under torch.autocast("cpu"), named by our op table: matrix products and convolutions run in the
region's lower-precision dtype; ops that lose accuracy there (losses, 3-d pools, most of linalg,
fft) run in float32; a few ops that combine tensors run in their widest floating dtype. Every
other op runs in the dtype of its inputs. float64 tensors are never cast, as in torch.
"""

from __future__ import annotations

from scriptc.types import dtype, float32, float64

from .state import STATE, cached_cast, get_autocast_dtype

LOWER_PRECISION = frozenset({
    "linear", "matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "prelu",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    # composites torch builds from mm/bmm, so they come out in the lower dtype there too
    "linalg_vecdot", "einsum", "tensordot", "linalg_multi_dot", "chain_matmul", "matrix_power",
})

FLOAT32 = frozenset({
    "mse_loss", "binary_cross_entropy", "cross_entropy", "nll_loss", "ctc_loss",
    "prod", "cdist", "trace", "quantile", "nanquantile", "polar", "view_as_complex",
    "avg_pool3d", "max_pool3d", "max_pool3d_with_indices", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool3d", "grid_sample",
    "inverse", "linalg_inv", "linalg_inv_ex", "cholesky", "linalg_cholesky", "linalg_cholesky_ex",
    "qr", "linalg_qr", "svd", "linalg_svd", "linalg_svdvals", "pinverse", "linalg_solve", "linalg_lstsq",
    "linalg_eig", "linalg_eigvals", "linalg_eigh", "linalg_eigvalsh", "linalg_matrix_rank",
    "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft",
    "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "fft_hfft2", "fft_ihfft2",
    "fft_hfftn", "fft_ihfftn",
})

WIDEST = frozenset({"cat", "stack", "index_copy"})


def _pads_in_float32(args) -> bool:
    """torch runs replication padding, and reflection padding of 1-d and 2-d planes, in float32."""
    mode = args[2] if len(args) > 2 else "constant"
    return mode == "replicate" or (mode == "reflect" and len(args[1]) <= 4)


def _eligible(value) -> bool:
    """A floating tensor other than float64 (a Tensor is the only argument whose dtype is ours)."""
    kind = getattr(value, "dtype", None)
    return type(kind) is dtype and kind.is_floating_point and kind is not float64


def _cast_each(op, args: tuple, cast) -> tuple:
    cast_args = list(args)
    for i, value in enumerate(args):
        if _eligible(value):
            cast_args[i] = cast(value)
    for i in op.tensor_list_args:
        if type(args[i]) in (list, tuple):
            cast_args[i] = type(args[i])(cast(t) if _eligible(t) else t for t in args[i])
    return tuple(cast_args)


def _tensors(op, args):
    yield from args
    for i in op.tensor_list_args:
        if type(args[i]) in (list, tuple):
            yield from args[i]


def autocast_arguments(op, args: tuple) -> tuple:
    """`args` as CPU autocast hands them to `op`: floating tensors cast to the op's autocast dtype."""
    name = op.name
    if name in LOWER_PRECISION:
        lower = get_autocast_dtype("cpu")
        return _cast_each(op, args, lambda t: t if t.dtype is lower else cached_cast(t, lower))
    if name in FLOAT32 or (name == "pad" and _pads_in_float32(args)):
        return _cast_each(op, args, lambda t: t if t.dtype is float32 else t.to(float32))
    if name in WIDEST:
        return _cast_to_widest(op, args)
    return args


def float32_under_autocast(*tensors) -> tuple:
    """`tensors` as torch's CPU autocast hands them to a loss on its float32 list that scriptc composes
    from pointwise ops (l1_loss, kl_div, ...): floating tensors in float32 while CPU autocast is on."""
    if not STATE.cpu_enabled:
        return tensors
    return tuple(t.to(float32) if _eligible(t) and t.dtype is not float32 else t for t in tensors)


def _cast_to_widest(op, args: tuple) -> tuple:
    """float32 when any input is float32; else every input must be in the region's dtype (torch's
    at::autocast::prioritize)."""
    lower = get_autocast_dtype("cpu")
    kinds = {t.dtype for t in _tensors(op, args) if _eligible(t)}
    if float32 in kinds:
        return _cast_each(op, args, lambda t: t if t.dtype is float32 else t.to(float32))
    if kinds - {lower}:
        raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return args
