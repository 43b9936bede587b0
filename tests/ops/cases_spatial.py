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
}
