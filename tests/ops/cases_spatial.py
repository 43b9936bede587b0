"""Reference cases for the spatial ops (convolution, transposed convolution, padding, pooling,
resampling): direct loops over output positions, independent of the GEMM kernels."""

from __future__ import annotations

import itertools

import numpy as np

from .cases import Case, rand


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
}
