"""Reference cases for the spatial ops (convolution, transposed convolution, padding, pooling,
resampling): direct loops over output positions, independent of the GEMM kernels."""

from __future__ import annotations

import itertools

import numpy as np

from .cases import Case, Int, rand


def _F(name):
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


def _tuple(v, n):
    return tuple(v) * (n if len(v) == 1 else 1) if isinstance(v, (list, tuple)) else (v,) * n


def conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation by a loop over output positions."""
    n_sp = w.ndim - 2
    stride, dilation = _tuple(stride, n_sp), _tuple(dilation, n_sp)
    if padding == "same":
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(w.shape[2:], dilation)]
    else:
        pads = [(p, p) for p in _tuple(padding, n_sp)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    out_sp = [(s - d * (k - 1) - 1) // st + 1 for s, k, st, d in zip(xp.shape[2:], w.shape[2:], stride, dilation)]
    o, cg = w.shape[:2]
    out = np.zeros((x.shape[0], o) + tuple(out_sp))
    for oc in range(o):
        g = oc // (o // groups)
        for pos in itertools.product(*map(range, out_sp)):
            window = tuple(slice(p * st, p * st + d * (k - 1) + 1, d)
                           for p, st, d, k in zip(pos, stride, dilation, w.shape[2:]))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            out[(slice(None), oc) + pos] = (patch * w[oc]).reshape(x.shape[0], -1).sum(axis=1)
    return out if b is None else out + b.reshape((1, -1) + (1,) * n_sp)


def conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution by scattering each input position's contribution."""
    n_sp = w.ndim - 2
    stride, dilation = _tuple(stride, n_sp), _tuple(dilation, n_sp)
    padding, output_padding = _tuple(padding, n_sp), _tuple(output_padding, n_sp)
    cin, og = w.shape[:2]
    full = [(i - 1) * s + d * (k - 1) + 1 + op for i, s, d, k, op in
            zip(x.shape[2:], stride, dilation, w.shape[2:], output_padding)]
    out = np.zeros((x.shape[0], og * groups) + tuple(full))
    for ic in range(cin):
        g = ic // (cin // groups)
        for pos in itertools.product(*map(range, x.shape[2:])):
            window = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                           for p, s, d, k in zip(pos, stride, dilation, w.shape[2:]))
            contribution = x[(slice(None), ic) + pos].reshape((-1, 1) + (1,) * n_sp) * w[ic][None]
            out[(slice(None), slice(g * og, (g + 1) * og)) + window] += contribution
    inner = tuple(slice(p, f - p) for p, f in zip(padding, full))
    out = out[(slice(None), slice(None)) + inner]
    return out if b is None else out + b.reshape((1, -1) + (1,) * n_sp)


def pad_ref(x, pad, mode="constant", value=None):
    """numpy's np.pad: constant and circular pad what is left after cropping negative pads; reflect and
    replicate pad from the original edges, then crop."""
    pairs = list(reversed([(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]))
    lead = x.ndim - len(pairs)
    positive = [(0, 0)] * lead + [(max(b, 0), max(a, 0)) for b, a in pairs]

    def cropped(array):
        return array[tuple([slice(None)] * lead + [slice(max(-b, 0), array.shape[lead + j] - max(-a, 0))
                                                    for j, (b, a) in enumerate(pairs)])]
    if mode == "constant":
        return np.pad(cropped(x), positive, constant_values=0 if value is None else value)
    if mode == "circular":
        return np.pad(cropped(x), positive, mode="wrap")
    return cropped(np.pad(x, positive, mode={"reflect": "reflect", "replicate": "edge"}[mode]))


def pool_ref(x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False, kind="max", include_pad=True,
             divisor=None, indices=False, dims=2):
    """Max or average pooling of `dims` spatial dims by a loop over output positions; (values, flat
    indices) with `indices`."""
    n_sp = dims
    kernel = _tuple(kernel, n_sp)
    stride = kernel if stride is None else _tuple(stride, n_sp)
    padding, dilation = _tuple(padding, n_sp), _tuple(dilation, n_sp)
    sizes = x.shape[-n_sp:]
    out_sp = []
    for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        o = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out_sp.append(o)
    lead = x.shape[:-n_sp]
    values = np.zeros(lead + tuple(out_sp))
    where = np.zeros(lead + tuple(out_sp), dtype=np.int64)
    for pos in itertools.product(*map(range, out_sp)):
        ranges = [[q * s - p + t * d for t in range(k)] for q, s, p, d, k in zip(pos, stride, padding, dilation, kernel)]
        inside = [[i for i in r if 0 <= i < n] for r, n in zip(ranges, sizes)]
        points = list(itertools.product(*inside))
        patch = np.stack([x[(Ellipsis,) + pt] for pt in points], axis=-1)
        if kind == "max":
            best = patch.argmax(axis=-1)
            values[(Ellipsis,) + pos] = patch.max(axis=-1)
            flat = [np.ravel_multi_index(pt, sizes) for pt in points]
            where[(Ellipsis,) + pos] = np.asarray(flat)[best]
        else:
            if divisor is not None:
                count = divisor
            elif include_pad:
                count = np.prod([min(r[-1] + 1, n + p) - r[0] for r, n, p in zip(ranges, sizes, padding)])
            else:
                count = len(points)
            values[(Ellipsis,) + pos] = patch.sum(axis=-1) / count
    return (values, where) if indices else values


def adaptive_ref(x, size, kind="avg", indices=False):
    n_sp = len(size)
    sizes = x.shape[-n_sp:]
    size = [n if o is None else o for o, n in zip(size, sizes)]
    values = np.zeros(x.shape[:-n_sp] + tuple(size))
    where = np.zeros(values.shape, dtype=np.int64)
    for pos in itertools.product(*map(range, size)):
        bounds = [range((i * n) // o, -(-((i + 1) * n) // o)) for i, n, o in zip(pos, sizes, size)]
        points = list(itertools.product(*bounds))
        patch = np.stack([x[(Ellipsis,) + pt] for pt in points], axis=-1)
        values[(Ellipsis,) + pos] = patch.mean(axis=-1) if kind == "avg" else patch.max(axis=-1)
        if kind == "max":
            where[(Ellipsis,) + pos] = np.asarray([np.ravel_multi_index(pt, sizes) for pt in points])[
                patch.argmax(axis=-1)]
    return (values, where) if indices else values


def unpool_ref(x, indices, size):
    lead = x.shape[:-len(size)]
    out = np.zeros((int(np.prod(lead)), int(np.prod(size))))
    np.put_along_axis(out, indices.reshape(out.shape[0], -1), x.reshape(out.shape[0], -1), axis=1)
    return out.reshape(lead + tuple(size))


def _pooled(dims, *shape):
    """(values, indices) of a 2-wide max pool of a random input, for max_unpool's cases."""
    values, indices = pool_ref(rand(*shape), [2] * dims, indices=True, dims=dims)
    return values, Int(indices)


def _max(dims, **k):
    return lambda x, *a: pool_ref(x, *a, dims=dims, **k)


def _avg(dims):
    return lambda x, k, s=None, p=0, c=False, i=True, d=None: pool_ref(x, k, s, p, 1, c, "avg", i, d, dims=dims)


def _torch_with_indices(name):
    return lambda torch, x, *a: getattr(torch.nn.functional, name)(x, *a, return_indices=True)


_UNPOOL_1D, _UNPOOL_2D, _UNPOOL_3D = _pooled(1, 2, 3, 8), _pooled(2, 1, 2, 6, 6), _pooled(3, 1, 2, 4, 4, 4)


def shuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for i in range(r):
        for j in range(r):
            out[:, :, i::r, j::r] = x[:, i * r + j::r * r]
    return out


def unshuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c * r * r, h // r, w // r))
    for i in range(r):
        for j in range(r):
            out[:, i * r + j::r * r] = x[:, :, i::r, j::r]
    return out


def channel_shuffle_ref(x, groups):
    per = x.shape[1] // groups
    return np.stack([x[:, (k % groups) * per + k // groups] for k in range(x.shape[1])], axis=1)


def im2col_ref(x, kernel, dilation, padding, stride):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cols = [xp[:, :, i * sh:i * sh + dh * (kh - 1) + 1:dh, j * sw:j * sw + dw * (kw - 1) + 1:dw].reshape(x.shape[0], -1)
            for i in range(oh) for j in range(ow)]
    return np.stack(cols, axis=2)


def col2im_ref(cols, size, kernel, dilation, padding, stride):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    n, c = cols.shape[0], cols.shape[1] // (kh * kw)
    out = np.zeros((n, c, size[0] + 2 * ph, size[1] + 2 * pw))
    oh = (out.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (out.shape[3] - dw * (kw - 1) - 1) // sw + 1
    for i in range(oh):
        for j in range(ow):
            block = cols[:, :, i * ow + j].reshape(n, c, kh, kw)
            out[:, :, i * sh:i * sh + dh * (kh - 1) + 1:dh, j * sw:j * sw + dw * (kw - 1) + 1:dw] += block
    return out[:, :, ph:ph + size[0], pw:pw + size[1]]


def _resample_matrix(n_in, n_out, mode, align_corners):
    """(n_out, n_in) weights of one dim, from the formulas in torch's docs (half-pixel centres)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        if mode == "nearest":
            m[o, min(int(np.floor(np.float32(o) * np.float32(n_in / n_out))), n_in - 1)] = 1
            continue
        src = o * (n_in - 1) / (n_out - 1) if align_corners else max((o + 0.5) * n_in / n_out - 0.5, 0)
        low = min(int(np.floor(src)), n_in - 1)
        m[o, low] += 1 - (src - low)
        m[o, min(low + 1, n_in - 1)] += src - low
    return m


def interpolate_ref(x, size, scale_factor=None, mode="nearest", align_corners=None):
    out = x
    for axis, n_out in enumerate(size, start=2):
        m = _resample_matrix(out.shape[axis], n_out, mode, align_corners)
        out = np.moveaxis(np.moveaxis(out, axis, -1) @ m.T, -1, axis)
    return out


def grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Zeros padding, 2-D: each output point by the formulas of torch's docs."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in itertools.product(range(n), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[b, i, j]
        ix = (gx + 1) / 2 * (w - 1) if align_corners else ((gx + 1) * w - 1) / 2
        iy = (gy + 1) / 2 * (h - 1) if align_corners else ((gy + 1) * h - 1) / 2
        if mode == "nearest":
            taps = [(int(np.rint(iy)), int(np.rint(ix)), 1.0)]
        else:
            x0, y0 = int(np.floor(ix)), int(np.floor(iy))
            taps = [(y0 + dy, x0 + dx, (1 - abs(iy - y0 - dy)) * (1 - abs(ix - x0 - dx)))
                    for dy in (0, 1) for dx in (0, 1)]
        for yy, xx, weight in taps:
            if 0 <= yy < h and 0 <= xx < w:
                out[b, :, i, j] += weight * x[b, :, yy, xx]
    return out


def affine_grid_ref(theta, size, align_corners=False):
    n, _, h, w = size

    def coords(k):
        return np.linspace(-1, 1, k) * (1 if align_corners else (k - 1) / k)
    ys, xs = np.meshgrid(coords(h), coords(w), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], axis=-1)
    return np.einsum("hwk,nck->nhwc", base, theta)


def _torch_unfold(torch, x, k, d, p, s):
    return torch.nn.functional.unfold(x, k, d, p, s)


def _torch_fold(torch, x, size, k, d, p, s):
    return torch.nn.functional.fold(x, size, k, d, p, s)


def _away_from_grid_lines(n, h_out, w_out, h, w):
    """Grid points whose source positions are not within 0.05 of an integer (kinks of bilinear sampling)."""
    grid = rng_uniform(-1.1, 1.1, (n, h_out, w_out, 2))
    for k, size in ((0, w), (1, h)):
        pos = ((grid[..., k] + 1) * size - 1) / 2
        near = np.abs(pos - np.round(pos)) < 0.05
        grid[..., k] = np.where(near, grid[..., k] + 0.2 / size, grid[..., k])
    return grid


def rng_uniform(lo, hi, shape):
    return rand(*shape, lo=lo, hi=hi)


CASES: dict[str, list[Case]] = {
    "conv1d": [Case((rand(2, 4, 7), rand(6, 2, 3), rand(6), [2], [1], [2], 2), conv_ref, torch=_F("conv1d"),
                    label="stride pad dilation groups"),
               Case((rand(3, 6), rand(2, 3, 2), None, [1], "same"), lambda x, *a: conv_ref(x[None], *a)[0],
                    torch=_F("conv1d"), label="unbatched same")],
    "conv3d": [Case((rand(1, 2, 3, 4, 3), rand(2, 2, 2, 2, 2), rand(2), [1, 2, 1], [1, 0, 1]), conv_ref,
                    torch=_F("conv3d"), label="stride pad")],
    "conv_transpose1d": [Case((rand(2, 4, 4), rand(4, 3, 3), rand(6), [2], [1], [1], 2), conv_transpose_ref,
                              torch=_F("conv_transpose1d"), label="stride pad output_padding groups")],
    "conv_transpose2d": [Case((rand(1, 2, 3, 3), rand(2, 3, 3, 2), rand(3), [2, 1], [1, 0], [1, 0], 1, [1, 2]),
                              conv_transpose_ref, torch=_F("conv_transpose2d"), label="stride pad dilation")],
    "conv_transpose3d": [Case((rand(1, 2, 2, 3, 2), rand(2, 2, 2, 2, 2), None, [2, 1, 2]), conv_transpose_ref,
                              torch=_F("conv_transpose3d"), label="stride")],
    "pad": [Case((rand(2, 3, 4), [1, 2]), pad_ref, torch=_F("pad"), label="constant"),
            Case((rand(2, 3, 4), [-1, 2, 1, -1], "constant", 1.5), pad_ref, torch=_F("pad"),
                 label="constant value, negative pads"),
            Case((rand(1, 2, 4, 5), [2, 1, 3, 1], "reflect"), pad_ref, torch=_F("pad"), label="reflect 2d"),
            Case((rand(1, 2, 4, 5), [-1, 3, 2, 0], "reflect"), pad_ref, torch=_F("pad"), label="reflect negative"),
            Case((rand(2, 3, 4), [3, 2], "replicate"), pad_ref, torch=_F("pad"), label="replicate"),
            Case((rand(1, 1, 2, 3, 3), [1, 2, 0, 1, 2, 1], "replicate"), pad_ref, torch=_F("pad"),
                 label="replicate 3d"),
            Case((rand(1, 2, 4, 5), [2, 3, 1, 4], "circular"), pad_ref, torch=_F("pad"), label="circular")],
    "max_pool1d": [Case((rand(2, 3, 9), [3], [2], [1], [2]), _max(1), torch=_F("max_pool1d"),
                        label="stride pad dilation"),
                   Case((rand(3, 8), [3], None, [0], [1], True), _max(1), torch=_F("max_pool1d"), label="ceil")],
    "max_pool3d": [Case((rand(1, 2, 4, 5, 4), [2, 3, 2], [2, 2, 1], [1, 1, 0]), _max(3), torch=_F("max_pool3d"))],
    "max_pool1d_with_indices": [Case((rand(2, 3, 9), [3], [2], [1]), _max(1, indices=True),
                                     torch=_torch_with_indices("max_pool1d"))],
    "max_pool2d_with_indices": [Case((rand(2, 2, 5, 6), [3, 2], [2, 1], [1, 0], [1, 2], True), _max(2, indices=True),
                                     torch=_torch_with_indices("max_pool2d"), label="ceil dilation")],
    "max_pool3d_with_indices": [Case((rand(2, 3, 4, 4), [2], [1]), _max(3, indices=True),
                                     torch=_torch_with_indices("max_pool3d"), label="unbatched")],
    "avg_pool1d": [Case((rand(2, 3, 9), [3], [2], [1], True, False), _avg(1), torch=_F("avg_pool1d"),
                        label="ceil exclude pad")],
    "avg_pool3d": [Case((rand(1, 2, 4, 5, 4), [2, 3, 2], [2, 2, 1], [1, 1, 0]), _avg(3), torch=_F("avg_pool3d")),
                   Case((rand(2, 3, 3, 4), [2], [1], [0], False, True, 3), _avg(3), torch=_F("avg_pool3d"),
                        label="divisor_override unbatched")],
    "adaptive_avg_pool1d": [Case((rand(2, 3, 7), [3]), adaptive_ref, torch=_F("adaptive_avg_pool1d"))],
    "adaptive_avg_pool3d": [Case((rand(1, 2, 5, 4, 3), [2, None, 2]), adaptive_ref, torch=_F("adaptive_avg_pool3d"))],
    "adaptive_max_pool1d": [Case((rand(2, 3, 7), [3]), lambda x, s: adaptive_ref(x, s, "max"),
                                 torch=_F("adaptive_max_pool1d"))],
    "adaptive_max_pool2d": [Case((rand(2, 2, 7, 5), [3, 2]), lambda x, s: adaptive_ref(x, s, "max"),
                                 torch=_F("adaptive_max_pool2d"))],
    "adaptive_max_pool3d": [Case((rand(2, 5, 4, 3), [2, 3, 2]), lambda x, s: adaptive_ref(x, s, "max"),
                                 torch=_F("adaptive_max_pool3d"), label="unbatched")],
    "adaptive_max_pool1d_with_indices": [Case((rand(2, 3, 7), [3]), lambda x, s: adaptive_ref(x, s, "max", True),
                                              torch=_torch_with_indices("adaptive_max_pool1d"))],
    "adaptive_max_pool2d_with_indices": [Case((rand(1, 2, 5, 7), [2, 3]), lambda x, s: adaptive_ref(x, s, "max", True),
                                              torch=_torch_with_indices("adaptive_max_pool2d"))],
    "adaptive_max_pool3d_with_indices": [Case((rand(1, 1, 3, 4, 5), [2, 2, 3]),
                                              lambda x, s: adaptive_ref(x, s, "max", True),
                                              torch=_torch_with_indices("adaptive_max_pool3d"))],
    "max_unpool1d": [Case((*_UNPOOL_1D, [8]), unpool_ref,
                          torch=lambda torch, x, i, size: torch.nn.functional.max_unpool1d(x, i, 2, output_size=size))],
    "max_unpool2d": [Case((*_UNPOOL_2D, [6, 6]), unpool_ref,
                          torch=lambda torch, x, i, size: torch.nn.functional.max_unpool2d(x, i, 2, output_size=size))],
    "max_unpool3d": [Case((*_UNPOOL_3D, [4, 4, 4]), unpool_ref,
                          torch=lambda torch, x, i, size: torch.nn.functional.max_unpool3d(x, i, 2, output_size=size))],
    "pixel_shuffle": [Case((rand(2, 8, 3, 2), 2), shuffle_ref, torch=_F("pixel_shuffle"))],
    "pixel_unshuffle": [Case((rand(2, 2, 4, 6), 2), unshuffle_ref, torch=_F("pixel_unshuffle"))],
    "channel_shuffle": [Case((rand(2, 6, 3, 2), 3), channel_shuffle_ref, torch=_F("channel_shuffle"))],
    "im2col": [Case((rand(2, 3, 5, 6), [2, 3], [1, 2], [1, 0], [2, 1]), im2col_ref, torch=_torch_unfold)],
    "col2im": [Case((rand(2, 12, 6), [4, 5], [2, 2], [1, 1], [0, 1], [2, 2]), col2im_ref, torch=_torch_fold)],
    "interpolate": [Case((rand(2, 3, 4, 5), [7, 3]), interpolate_ref, torch=_F("interpolate"), label="nearest"),
                    Case((rand(2, 3, 4, 5), [7, 3], None, "bilinear"), interpolate_ref, label="bilinear",
                         torch=lambda torch, x, s, f, m: torch.nn.functional.interpolate(x, s, f, m)),
                    Case((rand(1, 2, 3, 4, 2), [4, 2, 5], None, "trilinear", True), interpolate_ref,
                         label="trilinear align_corners",
                         torch=lambda torch, x, s, f, m, a: torch.nn.functional.interpolate(x, s, f, m, a))],
    "interpolate.size_tensor": [Case((rand(2, 3, 4, 5), Int(np.array([7, 3])), "bilinear"),
                                     lambda x, size, mode: interpolate_ref(x, size, None, mode),
                                     torch=lambda torch, x, s, m: torch.nn.functional.interpolate(x, s.tolist(), None, m))],
    "_shape_as_tensor": [Case((rand(2, 3, 4),), lambda x: np.array(x.shape), grad=False)],
    "grid_sample": [Case((rand(2, 3, 4, 5), _away_from_grid_lines(2, 3, 2, 4, 5)), grid_sample_ref,
                         torch=lambda torch, x, g: torch.nn.functional.grid_sample(x, g, align_corners=False)),
                    Case((rand(1, 2, 4, 5), rand(1, 3, 3, 2, lo=-1.1, hi=1.1), "nearest", "zeros", True),
                         grid_sample_ref, label="nearest align_corners", nograd=(1,), torch=_F("grid_sample"))],
    "affine_grid": [Case((rand(2, 2, 3), [2, 3, 4, 5], False), affine_grid_ref, torch=_F("affine_grid")),
                    Case((rand(1, 2, 3), [1, 1, 3, 2], True), affine_grid_ref, torch=_F("affine_grid"),
                         label="align_corners")],
}
