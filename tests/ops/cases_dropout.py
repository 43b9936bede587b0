"""Reference cases for the dropout ops (scriptc/ops/dropout.py) where they are deterministic: eval mode
and p = 0. Training mode is checked by statistics in tests/nn/test_dropout.py."""

from __future__ import annotations

from .cases import Case, rand


def _identity(x, *rest):
    return x


def _torch(name):
    return lambda torch, x, p, training: getattr(torch.nn.functional, name)(x, p, training)


CASES: dict[str, list[Case]] = {
    name: [Case((rand(*shape), 0.0, True), _identity, label="p=0", torch=_torch(fn)),
           Case((rand(*shape), 0.5, False), _identity, label="eval", torch=_torch(fn))]
    for name, fn, shape in (("alpha_dropout", "alpha_dropout", (3, 4)),
                            ("feature_alpha_dropout", "feature_alpha_dropout", (2, 3, 4)),
                            ("dropout1d", "dropout1d", (2, 3, 4)),
                            ("dropout2d", "dropout2d", (2, 3, 4, 2)),
                            ("dropout3d", "dropout3d", (2, 3, 2, 2, 2)))
}
