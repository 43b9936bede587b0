"""Ops torch computes for floating (and some integer) inputs only refuse bool and integer tensors as torch
does, in torch's words, rather than compute what torch refuses (checked against torch 2.13)."""

from __future__ import annotations

import pytest

import scriptc
from scriptc import ops
from scriptc.ops.float_only import FLOAT_ONLY
from tests.torch_errors import raised

torch = pytest.importorskip("torch")

CALLS = [
    "T.abs(T.ones(2, dtype=T.bool))",
    "T.floor(T.ones(2, dtype=T.bool))",
    "T.round(T.ones(2, dtype=T.bool))",
    "-T.ones(2, dtype=T.bool)",
    "T.relu(T.ones(2, dtype=T.bool))",
    "T.ones(2, dtype=T.bool).relu_()",
    "T.nn.functional.relu6(T.ones(2, dtype=T.bool))",
    "T.argmax(T.ones(2, dtype=T.bool))",
    "T.topk(T.ones(2, dtype=T.bool), 1)",
    "T.kthvalue(T.ones(2, dtype=T.bool), 1)",
    "T.median(T.ones(2, dtype=T.bool))",
    "T.isin(T.ones(2, dtype=T.bool), T.ones(2, dtype=T.bool))",
    "T.isin(T.ones(2), T.ones(2, dtype=T.bool))",
    "T.dist(T.ones(2), T.ones(2, dtype=T.bool))",
    "T.mm(T.ones(2, 2, dtype=T.bool), T.ones(2, 2, dtype=T.bool))",
    "T.nn.functional.gelu(T.ones(2, dtype=T.int64))",
    "T.nn.functional.silu(T.ones(2, dtype=T.int32))",
    "T.nn.functional.elu(T.ones(2, dtype=T.uint8))",
    "T.nn.functional.leaky_relu(T.ones(2, dtype=T.int8))",
    "T.nn.functional.softplus(T.ones(2, dtype=T.int16))",
    "T.nn.functional.layer_norm(T.ones(2, 3, dtype=T.int64), (3,))",
    "T.nn.functional.group_norm(T.ones(2, 3, dtype=T.int64), 1)",
    "T.nn.functional.batch_norm(T.ones(2, 3, dtype=T.int64), None, None, training=True)",
    "T.normal(T.ones(2, dtype=T.int64))",
    "T.poisson(T.ones(2, dtype=T.int64))",
    "T.nn.functional.max_pool1d(T.ones(1, 2, 3, dtype=T.int64), 1)",
    "T.nn.functional.max_pool2d(T.ones(1, 2, 3, dtype=T.bool), 1)",
    "T.nn.functional.avg_pool2d(T.ones(1, 2, 3, dtype=T.int32), 1)",
    "T.nn.functional.adaptive_avg_pool1d(T.ones(1, 2, 3, dtype=T.int64), 1)",
    "T.nn.functional.conv2d(T.ones(1, 1, 3, 3, dtype=T.bool), T.ones(1, 1, 1, 1, dtype=T.bool))",
]


@pytest.mark.parametrize("source", CALLS)
def test_refused_dtype_matches_torch(source):
    expected = raised(lambda: eval(source, {"T": torch}))
    assert expected is not None
    assert raised(lambda: eval(source, {"T": scriptc})) == expected


@pytest.mark.parametrize("source", [
    "T.abs(T.ones(2, dtype=T.int64))",
    "T.nn.functional.max_pool2d(T.ones(1, 2, 3, dtype=T.int64), 1)",
    "T.nn.functional.avg_pool2d(T.ones(1, 2, 3, dtype=T.int64), 1)",
    "T.nn.functional.relu(T.ones(2, dtype=T.int64))",
])
def test_dtypes_torch_computes_still_compute(source):
    assert raised(lambda: eval(source, {"T": torch})) is None
    assert eval(source, {"T": scriptc}).tolist() == eval(source, {"T": torch}).tolist()


def test_every_entry_names_an_op():
    assert all(ops.overloads(name) for name in FLOAT_ONLY)
