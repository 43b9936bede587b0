"""Reference cases for the normalization ops of scriptc/ops/normalization.py."""

from __future__ import annotations

import numpy as np

from .cases import Case, positive, rand


def _F(name):
    return lambda torch, *a, **k: getattr(torch.nn.functional, name)(*a, **k)


def _channel(t, ndim):
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def group_norm_ref(x, groups, w=None, b=None, eps=1e-5):
    rows = x.reshape(x.shape[0], groups, -1)
    out = ((rows - rows.mean(axis=2, keepdims=True)) / np.sqrt(rows.var(axis=2, keepdims=True) + eps)).reshape(x.shape)
    return out * (1 if w is None else _channel(w, x.ndim)) + (0 if b is None else _channel(b, x.ndim))


def instance_norm_ref(x, w=None, b=None, rm=None, rv=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    if use_input_stats:
        return group_norm_ref(x.reshape((1, -1) + x.shape[2:]), x.shape[0] * x.shape[1], None, None,
                              eps).reshape(x.shape) * (1 if w is None else _channel(w, x.ndim)) + \
            (0 if b is None else _channel(b, x.ndim))
    out = (x - _channel(rm, x.ndim)) / np.sqrt(_channel(rv, x.ndim) + eps)
    return out * (1 if w is None else _channel(w, x.ndim)) + (0 if b is None else _channel(b, x.ndim))


def rms_norm_ref(x, shape, w=None, eps=None):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    eps = np.finfo(np.float32).eps if eps is None else eps
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps) * (1 if w is None else w)


def _torch_instance_norm(torch, x, w=None, b=None, rm=None, rv=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    return torch.nn.functional.instance_norm(x, rm, rv, w, b, use_input_stats, momentum, eps)


CASES: dict[str, list[Case]] = {
    "group_norm": [Case((rand(2, 6, 3, 2), 3, rand(6), rand(6)), group_norm_ref, torch=_F("group_norm"), rtol=1e-4,
                        atol=1e-4),
                   Case((rand(3, 4, 5), 4), group_norm_ref, torch=_F("group_norm"), label="no affine", rtol=1e-4,
                        atol=1e-4)],
    "instance_norm": [Case((rand(2, 3, 4, 3), rand(3), rand(3), None, None, True, 0.1, 1e-5), instance_norm_ref,
                           torch=_torch_instance_norm, rtol=1e-4, atol=1e-4, label="input stats"),
                      Case((rand(2, 3, 5), None, None, rand(3), positive(3), False, 0.1, 1e-5), instance_norm_ref,
                           torch=_torch_instance_norm, nograd=(3, 4), label="running stats")],
    "rms_norm": [Case((rand(3, 4, 5), [5], rand(5)), rms_norm_ref, torch=_F("rms_norm"), rtol=1e-4, atol=1e-4),
                 Case((rand(3, 4, 5), [4, 5], None, 1e-3), rms_norm_ref, torch=_F("rms_norm"), label="2 dims eps",
                      rtol=1e-4, atol=1e-4)],
}
