"""How a functional wrapper calls its op-table op (out of place, or in place for `inplace=True`)."""

from __future__ import annotations

from scriptc.ops import OPS
from scriptc.tensors import call, call_inplace


def _op(name, *args):
    return call(OPS[name], args)


def _activation(name, input, inplace, *extra):
    op = OPS[name]
    if inplace:
        return call_inplace(op.inplace, (input,) + extra)
    return call(op, (input,) + extra)
