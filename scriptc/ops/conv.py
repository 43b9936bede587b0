"""N-d convolution and transposed convolution (conv1d, conv3d, conv_transpose1d/2d/3d) as GEMMs.

A convolution is W @ columns(x): `columns` copies every kernel window of the padded input into a
(groups, C/groups * K, L * N) matrix (K kernel taps, L output positions), so one GEMM per group
covers the whole batch. Its adjoint, `scatter`, runs W^T @ y and adds each column back at its
window (col2im): the input gradient of a convolution and the forward of a transposed one. A
transposed convolution's input gradient is, in turn, a convolution of the output gradient. Every
step is a whole-array numpy operation; the Python loop runs over kernel taps only.

conv2d keeps its own entry (linalg.py), where the compiled backends attach their im2col and GEMM.
"""

from __future__ import annotations

import itertools
import math

from scriptc.types import TensorType

from . import register
from .rules import check_conv_channels, expand, is_known
from .schema import OPAQUE

_DIM_NAMES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _shape_text(sizes) -> str:
    return " x ".join(map(str, sizes))


def same_padding(kernel, dilation) -> list[tuple[int, int]]:
    """padding='same' per dim as (before, after): the odd one goes after, as torch pads."""
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def _check_common(x, w, b, stride, dilation, groups, spatial, name, transposed):
    if x.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to {name}, but got "
                           f"input of size: {list(x.shape)}")
    if w.ndim != spatial + 2:
        raise RuntimeError("weight should have at least three dimensions" if w.ndim < 3 else
                           f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight {list(w.shape)}, but "
                           f"got {x.ndim}-dimensional input of size {list(x.shape)} instead")
    if x.dtype != w.dtype:
        raise RuntimeError(f"expected scalar type {_torch_name(x.dtype)} but found {_torch_name(w.dtype)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(w.shape)}] instead")
    check_conv_channels(x.shape, w.shape, groups, spatial, transposed)
    out_channels = w.shape[1] * groups if transposed else w.shape[0]
    if b is not None and (b.ndim != 1 or b.shape[0] != out_channels):
        given = "transposed=1, weight" if transposed else "weight"
        raise RuntimeError(f"Given {given} of size {list(w.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(b.shape)} instead")


def _torch_name(dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int"}.get(
        dtype.name, dtype.name)


def _conv_pads(x, w, stride, padding, dilation, spatial):
    """Per spatial dim (before, after) zero padding of a convolution."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * spatial
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            return same_padding(w.shape[2:], dilation)
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    pads = expand(padding, spatial)
    if any(p < 0 for p in pads):
        raise RuntimeError("negative padding is not supported")
    return [(p, p) for p in pads]


def _positions(sizes, kernel, stride, dilation):
    return tuple((size - d * (k - 1) - 1) // s + 1 for size, k, s, d in zip(sizes, kernel, stride, dilation))


def _phases(kernel, stride, dilation):
    """The kernel taps grouped by the phase of the stride lattice they land on: {phase: [(tap, shift)]}.

    Tap t reaches offset t * d; with stride s that is lattice point (t * d) // s of phase (t * d) % s.
    Taps of one phase touch one sub-lattice, shifted: reading or writing it phase by phase turns the
    strided accesses of every tap into one strided copy per phase and contiguous slices."""
    phases: dict[tuple, list] = {}
    for tap in itertools.product(*(range(k) for k in kernel)):
        offsets = [t * d for t, d in zip(tap, dilation)]
        phase = tuple(o % s for o, s in zip(offsets, stride))
        phases.setdefault(phase, []).append((tap, tuple(o // s for o, s in zip(offsets, stride))))
    return phases


def _lattice(phase, stride, sizes):
    """The strided slices of one phase's sub-lattice, and its size per dim."""
    where = tuple(slice(p, None, s) for p, s in zip(phase, stride))
    counts = tuple(len(range(p, n, s)) for p, n, s in zip(phase, sizes, stride))
    return where, counts


def to_inner(xp, y, pads=None):
    """(N, C, *s) -> (C, *s, N), zero-padded by `pads` ((before, after) per spatial dim): the layout
    the GEMMs and window copies work in. With the batch innermost, every window copy and col2im add
    runs over whole rows of N * width elements instead of short rows of width."""
    pads = pads or [(0, 0)] * (y.ndim - 2)
    sizes = tuple(n + lo + hi for n, (lo, hi) in zip(y.shape[2:], pads))
    padded = any(lo or hi for lo, hi in pads)
    out = (xp.zeros if padded else xp.empty)((y.shape[1],) + sizes + (y.shape[0],), dtype=y.dtype)
    window = tuple(slice(lo, lo + n) for n, (lo, _) in zip(y.shape[2:], pads))
    for c in range(y.shape[1]):  # one channel at a time: see from_inner
        out[(c,) + window] = xp.moveaxis(y[:, c], 0, -1)
    return out


def from_inner(xp, y, crop=None):
    """(C, *s, N) -> (N, C, *s), contiguous; `crop` keeps a window of the spatial dims.

    The copy goes one channel at a time: a whole-array transposing copy reads one side with a stride
    of a plane per element and ran at memory speed (97 ms for a (64, 64, 32, 32) batch); a channel's
    (*s, N) block stays in cache."""
    window = y[(slice(None),) + tuple(crop)] if crop is not None else y
    out = xp.empty((y.shape[-1], y.shape[0]) + window.shape[1:-1], dtype=y.dtype)
    for c in range(y.shape[0]):
        out[:, c] = xp.moveaxis(window[c], -1, 0)
    return out


def columns(xp, x, kernel, stride, dilation, positions, groups):
    """im2col of x in (C, *s, N) layout (already padded): (groups, C/groups * K, L * N), every kernel
    tap's window of every output position as a column."""
    c, n = x.shape[0], x.shape[-1]
    cols = xp.empty((c,) + tuple(kernel) + tuple(positions) + (n,), dtype=x.dtype)
    for phase, taps in _phases(kernel, stride, dilation).items():
        where, _ = _lattice(phase, stride, x.shape[1:-1])
        lattice = xp.ascontiguousarray(x[(slice(None),) + where])
        for tap, shift in taps:
            window = tuple(slice(h, h + p) for h, p in zip(shift, positions))
            cols[(slice(None),) + tap] = lattice[(slice(None),) + window]
    return cols.reshape(groups, (c // groups) * math.prod(kernel), math.prod(positions) * n)


def scatter(xp, cols, channels, n, kernel, stride, dilation, positions, sizes):
    """col2im, the adjoint of `columns`: (C, *sizes, N) with each column added back at its window.
    `cols` is (groups, C/groups * K, L * N)."""
    cols = cols.reshape((channels,) + tuple(kernel) + tuple(positions) + (n,))
    phases = _phases(kernel, stride, dilation)
    covered = len(phases) == math.prod(stride)  # every lattice point is written: no zero fill needed
    out = (xp.empty if covered else xp.zeros)((channels,) + tuple(sizes) + (n,), dtype=cols.dtype)
    for phase, taps in phases.items():
        where, counts = _lattice(phase, stride, sizes)
        lattice = xp.zeros((channels,) + counts + (n,), dtype=cols.dtype)
        for tap, shift in taps:
            window = tuple(slice(h, h + p) for h, p in zip(shift, positions))
            lattice[(slice(None),) + window] += cols[(slice(None),) + tap]
        out[(slice(None),) + where] = lattice
    return out


def _rows(y, groups):
    """(C, *s, N) -> (groups, C/groups, prod(s) * N): the layout GEMMs against grouped weights take."""
    return y.reshape(groups, y.shape[0] // groups, -1)


def _weight_rows(w, groups):
    return w.reshape(groups, w.shape[0] // groups, -1)


def _add_bias(out, b):
    if b is not None:
        out += b.reshape((1, -1) + (1,) * (out.ndim - 2))
    return out


def _correlate(xp, x, w, stride, pads, dilation, groups):
    """The convolution (cross-correlation) of batched x with w, without bias."""
    kernel = w.shape[2:]
    padded = to_inner(xp, x, pads)
    positions = _positions(padded.shape[1:-1], kernel, stride, dilation)
    cols = columns(xp, padded, kernel, stride, dilation, positions, groups)
    out = xp.matmul(_weight_rows(w, groups), cols)
    return from_inner(xp, out.reshape((w.shape[0],) + positions + (x.shape[0],)))


def _correlate_grads(xp, x, w, g, stride, pads, dilation, groups):
    """(d input, d weight) of _correlate, for output gradient g."""
    kernel = w.shape[2:]
    padded = to_inner(xp, x, pads)
    positions = g.shape[2:]
    g_rows = _rows(to_inner(xp, g), groups)
    cols = columns(xp, padded, kernel, stride, dilation, positions, groups)
    gw = xp.matmul(g_rows, cols.swapaxes(1, 2)).reshape(w.shape)
    gcols = xp.matmul(_weight_rows(w, groups).swapaxes(1, 2), g_rows)
    full = scatter(xp, gcols, x.shape[1], x.shape[0], kernel, stride, dilation, positions, padded.shape[1:-1])
    inner = tuple(slice(lo, lo + size) for (lo, _), size in zip(pads, x.shape[2:]))
    return from_inner(xp, full, inner), gw


def _transposed(xp, x, w, stride, padding, output_padding, dilation, groups):
    """The transposed convolution of batched x with w (in, out/groups, *k), without bias."""
    kernel = w.shape[2:]
    out_channels = w.shape[1] * groups
    positions = x.shape[2:]
    cols = xp.matmul(_weight_rows(w, groups).swapaxes(1, 2), _rows(to_inner(xp, x), groups))
    full = tuple((p - 1) * s + d * (k - 1) + 1 + op for p, s, d, k, op in
                 zip(positions, stride, dilation, kernel, output_padding))
    out = scatter(xp, cols, out_channels, x.shape[0], kernel, stride, dilation, positions, full)
    return from_inner(xp, out, tuple(slice(p, f - p) for p, f in zip(padding, full)))


def _transposed_grads(xp, x, w, g, stride, padding, dilation, groups):
    """(d input, d weight) of _transposed, for output gradient g: g seen as a convolution's input."""
    kernel = w.shape[2:]
    embedded = to_inner(xp, g, [(p, p) for p in padding])
    cols = columns(xp, embedded, kernel, stride, dilation, x.shape[2:], groups)
    gw = xp.matmul(_rows(to_inner(xp, x), groups), cols.swapaxes(1, 2)).reshape(w.shape)
    gx = xp.matmul(_weight_rows(w, groups), cols)
    return from_inner(xp, gx.reshape((x.shape[1],) + x.shape[2:] + (x.shape[0],))), gw


# --- the ops -----------------------------------------------------------------------

def _conv_kernel(spatial):
    name = f"conv{spatial}d"

    def kernel(xp, x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        stride, dilation = expand(stride, spatial, "stride"), expand(dilation, spatial, "dilation")
        _check_common(x, w, b, stride, dilation, groups, spatial, name, transposed=False)
        pads = _conv_pads(x, w, stride, padding, dilation, spatial)
        batched = x.ndim == spatial + 2
        x = x if batched else x[None]
        padded = tuple(size + lo + hi for size, (lo, hi) in zip(x.shape[2:], pads))
        reach = tuple(d * (k - 1) + 1 for d, k in zip(dilation, w.shape[2:]))
        if any(r > p for r, p in zip(reach, padded)):
            raise RuntimeError(f"Calculated padded input size per channel: ({_shape_text(padded)}). Kernel size: "
                               f"({_shape_text(reach)}). Kernel size can't be greater than actual input size")
        out = _add_bias(_correlate(xp, x, w, stride, pads, dilation, groups), b)
        return out if batched else out[0]
    return kernel


def _conv_grad(spatial):
    def grad(ctx, g):
        xp, x, w = ctx.xp, ctx.input, ctx.weight
        stride, dilation = expand(ctx.stride, spatial), expand(ctx.dilation, spatial)
        pads = _conv_pads(x, w, stride, ctx.padding, dilation, spatial)
        batched = x.ndim == spatial + 2
        gx, gw = _correlate_grads(xp, x if batched else x[None], w, g if batched else g[None], stride, pads,
                                  dilation, ctx.groups)
        gb = g.sum(axis=(0,) + tuple(range(2, g.ndim))) if batched else g.sum(axis=tuple(range(1, g.ndim)))
        return (gx if batched else gx[0]), gw, (gb if ctx.bias is not None else None), None, None, None, None
    return grad


def _conv_rule(spatial):
    def rule(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if x.shape is None or w.shape is None or not all(map(is_known, (stride, padding, dilation))):
            return TensorType(x.dtype, None, x.device)
        check_conv_channels(x.shape, w.shape, groups, spatial)
        stride, dilation = expand(stride, spatial), expand(dilation, spatial)
        kernel = w.shape[2:]
        if isinstance(padding, str):
            pads = same_padding(kernel, dilation) if padding == "same" else [(0, 0)] * spatial
        else:
            pads = [(p, p) for p in expand(padding, spatial)]
        sizes = tuple(None if not isinstance(size, int) or not isinstance(k, int) else
                      (size + lo + hi - d * (k - 1) - 1) // s + 1
                      for size, k, s, d, (lo, hi) in zip(x.shape[-spatial:], kernel, stride, dilation, pads))
        lead = tuple(x.shape[:1]) if len(x.shape) == spatial + 2 else ()
        return TensorType(x.dtype, lead + (w.shape[0],) + sizes, x.device)
    return rule


def _output_padding_check(output_padding, stride, dilation, spatial):
    if all(op < s or op < d for op, s, d in zip(output_padding, stride, dilation)):
        return
    # torch words it for 2-d at least: a 1-d convolution is a 2-d one of height 1.
    names = _DIM_NAMES[max(spatial, 2)]
    pad = (0,) * (len(names) - spatial)
    one = (1,) * (len(names) - spatial)
    parts = ([f"output_padding_{n}: {v}" for n, v in zip(names, pad + tuple(output_padding))]
             + [f"stride_{n}: {v}" for n, v in zip(names, one + tuple(stride))]
             + [f"dilation_{n}: {v}" for n, v in zip(names, one + tuple(dilation))])
    raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))


def _transposed_geometry(x, w, stride, padding, output_padding, dilation, spatial):
    stride, dilation = expand(stride, spatial, "stride"), expand(dilation, spatial, "dilation")
    padding, output_padding = expand(padding, spatial), expand(output_padding, spatial, "output_padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    return stride, padding, output_padding, dilation


def _transposed_kernel(spatial):
    name = f"conv_transpose{spatial}d"

    def kernel(xp, x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        stride, padding, output_padding, dilation = _transposed_geometry(x, w, stride, padding, output_padding,
                                                                         dilation, spatial)
        _check_common(x, w, b, stride, dilation, groups, spatial, name, transposed=True)
        _output_padding_check(output_padding, stride, dilation, spatial)
        batched = x.ndim == spatial + 2
        x = x if batched else x[None]
        sizes = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 + op for i, s, p, d, k, op in
                      zip(x.shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
        if any(size <= 0 for size in sizes):
            raise RuntimeError(f"Given input size per channel: ({_shape_text(x.shape[2:])}). Calculated output size "
                               f"per channel: ({_shape_text(sizes)}). Output size is too small")
        out = _add_bias(_transposed(xp, x, w, stride, padding, output_padding, dilation, groups), b)
        return out if batched else out[0]
    return kernel


def _transposed_grad(spatial):
    def grad(ctx, g):
        xp, x, w = ctx.xp, ctx.input, ctx.weight
        stride, padding, _, dilation = _transposed_geometry(x, w, ctx.stride, ctx.padding, ctx.output_padding,
                                                            ctx.dilation, spatial)
        batched = x.ndim == spatial + 2
        gx, gw = _transposed_grads(xp, x if batched else x[None], w, g if batched else g[None], stride, padding,
                                   dilation, ctx.groups)
        gb = g.sum(axis=(0,) + tuple(range(2, g.ndim))) if batched else g.sum(axis=tuple(range(1, g.ndim)))
        return (gx if batched else gx[0]), gw, (gb if ctx.bias is not None else None), None, None, None, None, None
    return grad


def _transposed_rule(spatial):
    def rule(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        if (x.shape is None or w.shape is None or not all(map(is_known, (stride, padding, output_padding, dilation)))
                or not isinstance(groups, int)):
            return TensorType(x.dtype, None, x.device)
        check_conv_channels(x.shape, w.shape, groups, spatial, transposed=True)
        stride, dilation = expand(stride, spatial), expand(dilation, spatial)
        padding, output_padding = expand(padding, spatial), expand(output_padding, spatial)
        sizes = tuple(None if not isinstance(i, int) or not isinstance(k, int) else
                      (i - 1) * s - 2 * p + d * (k - 1) + 1 + op for i, s, p, d, k, op in
                      zip(x.shape[-spatial:], stride, padding, dilation, w.shape[2:], output_padding))
        sizes = tuple(None if size is not None and size <= 0 else size for size in sizes)  # (the kernel raises)
        out_channels = w.shape[1] * groups if isinstance(w.shape[1], int) else None
        lead = tuple(x.shape[:1]) if len(x.shape) == spatial + 2 else ()
        return TensorType(x.dtype, lead + (out_channels,) + sizes, x.device)
    return rule


for _spatial in (1, 3):
    _ones, _zeros = [1] * _spatial, [0] * _spatial
    register(f"conv{_spatial}d(input: Tensor, weight: Tensor, bias: Tensor? = None, stride: int[] = {_ones}, "
             f"padding: int[]|str = {_zeros}, dilation: int[] = {_ones}, groups: int = 1) -> Tensor", OPAQUE,
             _conv_kernel(_spatial), shape=_conv_rule(_spatial), grad=_conv_grad(_spatial),
             save=("input", "weight"), method=False, functional=True, keeps_layout=True,
             doc=f"{_spatial}-D convolution (cross-correlation): one GEMM per group over im2col columns.")
for _spatial in (1, 2, 3):
    _ones, _zeros = [1] * _spatial, [0] * _spatial
    register(f"conv_transpose{_spatial}d(input: Tensor, weight: Tensor, bias: Tensor? = None, "
             f"stride: int[] = {_ones}, padding: int[] = {_zeros}, output_padding: int[] = {_zeros}, "
             f"groups: int = 1, dilation: int[] = {_ones}) -> Tensor", OPAQUE, _transposed_kernel(_spatial),
             shape=_transposed_rule(_spatial), grad=_transposed_grad(_spatial), save=("input", "weight"),
             method=False, functional=True, fusion_head=_spatial == 2, head_floor=_spatial == 2, keeps_layout=True,
             doc=f"{_spatial}-D transposed convolution, the adjoint of conv{_spatial}d: W^T @ x, then col2im.")
