"""Result dtypes of the op table's binary pointwise ops over every mix of operands torch promotes: tensors
with dims, 0-d tensors and Python scalars, of bool, integer, float, bfloat16 and complex dtypes, against
torch 2.13: where torch computes a result, scriptc computes one of the same dtype (which mixes torch
refuses is checked elsewhere)."""

from __future__ import annotations

import warnings

import pytest

import scriptc
from scriptc import ops
from scriptc.ops.schema import POINTWISE

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
SCALARS = [True, 3, 2.5, 1 + 2j]
# torch's results of a dtype scriptc does not have (float16 meeting complex is complex32 there)
_TORCH_ONLY_DTYPES = {"complex32"}
# ops scriptc computes for real operands only, so far
_REAL_ONLY = {"logaddexp"}


def _binary_pointwise_ops() -> list[str]:
    """Pointwise ops of the table taking (self, other) tensors or scalars that torch has as functions."""
    names = set()
    for op in ops.all_ops():
        args = op.schema.args
        if (op.kind == POINTWISE and op.function and op.inplace_of is None and len(args) >= 2
                and all(str(a.type) in ("Tensor", "Tensor|Scalar") for a in args[:2])
                and not any(not a.has_default for a in args[2:]) and hasattr(torch, op.base_name)):
            names.add(op.base_name)
    return sorted(names)


def _operands(T):
    tensors = [T.ones(2, dtype=getattr(T, d)) for d in DTYPES]
    zero_d = [T.ones((), dtype=getattr(T, d)) for d in DTYPES]
    return [(a, b) for a in tensors for b in tensors + zero_d + SCALARS] + [(a, b) for a in zero_d for b in SCALARS]


def _result_dtypes(T, name: str) -> list:
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in _operands(T):
            try:
                results.append(str(getattr(T, name)(a, b).dtype).split(".")[-1])
            except Exception as exc:
                results.append(type(exc))
    return results


@pytest.mark.parametrize("name", _binary_pointwise_ops())
def test_result_dtype_matches_torch(name):
    combinations = [(str(a.dtype) + str(tuple(a.shape)), b if not hasattr(b, "dtype") else str(b.dtype) +
                     str(tuple(b.shape))) for a, b in _operands(torch)]
    differing = [(combination, theirs, ours) for combination, theirs, ours in
                 zip(combinations, _result_dtypes(torch, name), _result_dtypes(scriptc, name))
                 if isinstance(theirs, str) and theirs not in _TORCH_ONLY_DTYPES and ours != theirs
                 and not (name in _REAL_ONLY and theirs.startswith("complex"))]
    assert not differing, differing[:5]
