"""decode: a request's numbers parsed natively give what the JSON parser gives, answer or error."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptc.errors import ServeError
from scriptc.serving.jsonscan import scan_buffers
from scriptc.serving.protocol import ModelEntry, TensorSpec, _check_header, decode

N = 24  # elements per input: past the scan's shortest array
scans = pytest.mark.skipif(sys.byteorder != "little", reason="the native scan runs on little-endian hosts")


_INPUTS = {"x": "FP32", "y": "FP64", "h": "FP16", "i": "INT64"}


def _entry(names: str = "xyhi") -> ModelEntry:
    inputs = [TensorSpec(name, _INPUTS[name], [-1, N]) for name in names]
    return ModelEntry("m", None, inputs, [TensorSpec("output0", "FP32", [-1, N])], True)


def _parsed(entry: ModelEntry, body: bytes):
    """What the JSON parser alone makes of a body: (request, arrays), or its ServeError's message."""
    try:
        header = _check_header(entry, body)
    except ServeError as exc:
        return str(exc)
    return header.request, [np.asarray(p) for p in header.parts]


def _decoded(entry: ModelEntry, body: bytes):
    try:
        return decode(entry, body, None)
    except ServeError as exc:
        return str(exc)


def assert_same(entry: ModelEntry, body: bytes) -> None:
    expected, got = _parsed(entry, body), _decoded(entry, body)
    if isinstance(expected, str):
        assert got == expected
        return
    assert not isinstance(got, str), got
    assert _without_data(got[0]) == _without_data(expected[0])
    for g, e in zip(got[1], expected[1], strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape and g.tobytes() == e.tobytes()


def _without_data(request: dict) -> dict:
    """The request but its inputs' data, which decode's request may hold placeholders of."""
    return {**request, "inputs": [{k: v for k, v in item.items() if k != "data"} for item in request["inputs"]]}


def _body(rows: int = 1, names: str = "xyhi", **changes) -> dict:
    rng = np.random.default_rng(rows)
    request = {"inputs": [
        {"name": "x", "shape": [rows, N], "datatype": "FP32", "data": rng.standard_normal(rows * N).astype(np.float32).tolist()},
        {"name": "y", "shape": [rows, N], "datatype": "FP64", "data": rng.standard_normal(rows * N).tolist()},
        {"name": "h", "shape": [rows, N], "datatype": "FP16", "data": (rng.standard_normal(rows * N) * 1e4).tolist()},
        {"name": "i", "shape": [rows, N], "datatype": "INT64", "data": rng.integers(-9, 9, rows * N).tolist()},
    ]}
    request["inputs"] = [item for item in request["inputs"] if item["name"] in names]
    request.update(changes)
    return request


@scans
def test_json_inputs_of_each_float_dtype_and_an_int_one():
    entry = _entry()
    for rows in (1, 3):
        assert_same(entry, json.dumps(_body(rows)).encode())
        assert_same(entry, json.dumps(_body(rows), separators=(",", ":")).encode())
        assert_same(entry, json.dumps(_body(rows), indent=2).encode())
        request, _ = decode(entry, json.dumps(_body(rows)).encode(), None)
        assert all(isinstance(item["data"], str) for item in request["inputs"][:3])  # the scan read them


@scans
def test_a_cached_header_still_reads_each_requests_numbers_and_count():
    entry = _entry("xyh")
    for rows in (1, 1, 2, 2, 1):
        assert_same(entry, json.dumps(_body(rows, "xyh")).encode())
    assert len(entry.headers) == 2 and all(b"scriptc-numbers-" in head for head in entry.headers)
    short = _body(1, "xyh")
    short["inputs"][0]["data"] = short["inputs"][0]["data"][:-1]
    message = _decoded(entry, json.dumps(short).encode())
    assert message == _parsed(entry, json.dumps(short).encode()) and "elements for shape" in message


def _nest(request: dict, *names_rows) -> dict:
    """The request with these inputs' data as lists of `rows` equal rows."""
    for item in request["inputs"]:
        for name, rows in names_rows:
            if item["name"] == name:
                data = item["data"]
                item["data"] = [data[i * len(data) // rows:(i + 1) * len(data) // rows] for i in range(rows)]
    return request


@scans
@pytest.mark.parametrize("nesting", [
    [("x", 3), ("y", 3)],                      # a row per row of the shape
    [("x", 3)],
    [("y", 1)],                                # [[all of them]]
    [("h", 3), ("i", 3)],                      # an integer input's rows: the parser reads the body
])
def test_nested_rows_read_as_numpy_stacks_them(nesting):
    entry = _entry()
    request = _nest(_body(3), *nesting)
    assert_same(entry, json.dumps(request).encode())
    got, _ = decode(entry, json.dumps(request).encode(), None)
    scanned = [item["name"] for item in got["inputs"] if not isinstance(item["data"], list) or
               isinstance(item["data"][0], str)]
    assert scanned == ([] if any(name == "i" for name, _ in nesting) else ["x", "y", "h", "i"])


def test_deeper_ragged_and_uneven_nestings_get_the_parsers_answer():
    entry = _entry("xy")
    deeper = _body(2, "xy")
    deeper["inputs"][0]["data"] = [[deeper["inputs"][0]["data"][:N], deeper["inputs"][0]["data"][N:]]]
    ragged = _nest(_body(2, "xy"), ("x", 2))
    ragged["inputs"][0]["data"][1].append(1.5)
    ragged["inputs"][0]["data"][0].pop()
    uneven = _nest(_body(2, "xy"), ("x", 2))
    uneven["inputs"][0]["data"][1] = [uneven["inputs"][0]["data"][1]]
    for request in (deeper, ragged, uneven):
        assert_same(entry, json.dumps(request).encode())
    assert "does not fit" in _decoded(entry, json.dumps(ragged).encode())


@pytest.mark.parametrize("change", [
    lambda r: r["inputs"][0].update(data=[r["inputs"][0]["data"][:N // 2], r["inputs"][0]["data"][N // 2:]]),
    lambda r: r["inputs"][1].update(data=[float("nan")] + r["inputs"][1]["data"][1:]),
    lambda r: r.update(id=list(range(40))),
    lambda r: r.update(parameters={"numbers": list(range(40))}),
    lambda r: r["inputs"][0].update(parameters={"binary_data_size": 4}),
    lambda r: r["inputs"][0].update(shape=[1] * 17),
    lambda r: r["inputs"][1].update(data=["1e400"] + r["inputs"][1]["data"][1:]),
    lambda r: r["inputs"][1].update(data=[1e-320] + r["inputs"][1]["data"][1:]),
    lambda r: r["inputs"][1].update(data=[10 ** 30 + 1] + r["inputs"][1]["data"][1:]),
    lambda r: r["inputs"][2].update(datatype="FP32"),
    lambda r: r["inputs"].append(dict(r["inputs"][0])),
    lambda r: r["inputs"].pop(),
])
def test_requests_the_scan_does_not_take_as_they_are_get_the_parsers_answer(change):
    entry = _entry()
    request = _body(1)
    change(request)
    assert_same(entry, json.dumps(request).encode())


def test_malformed_json_gets_the_parsers_own_message():
    entry = _entry()
    text = json.dumps(_body(1))
    for broken in (text[:-1], text.replace("]", "", 1), text.replace('"i"', "i", 1), text + "x",
                   text.replace(", ", ", 01, ", 1), text.replace("[", "[,", 2)):
        assert_same(entry, broken.encode())
        assert "malformed JSON" in _decoded(entry, broken.encode())


def test_a_duplicate_data_key_is_the_last_one_as_json_reads_it():
    entry = _entry()
    text = json.dumps(_body(1))
    numbers = json.dumps(list(range(N)))
    assert_same(entry, text.replace('"data": ', f'"data": {numbers}, "data": ', 1).encode())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=N, max_size=N),
       st.lists(st.one_of(st.floats(allow_nan=False), st.integers(-2 ** 64, 2 ** 64)), min_size=N, max_size=N))
def test_any_numbers(floats, doubles):
    entry = _entry()
    request = _body(1)
    request["inputs"][0]["data"] = floats
    request["inputs"][1]["data"] = doubles
    assert_same(entry, json.dumps(request).encode())


def test_a_body_past_the_kept_buffer_gets_its_own():
    wide = 40000
    entry = ModelEntry("m", None, [TensorSpec("x", "FP32", [-1, wide])], [TensorSpec("output0", "FP32", [-1, wide])],
                       True)
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(wide).astype(np.float32)
        body = json.dumps({"inputs": [{"name": "x", "shape": [1, wide], "datatype": "FP32", "data": x.tolist()}]})
        assert len(body) // 2 > scan_buffers.KEPT_VALUES
        assert_same(entry, body.encode())
        assert decode(entry, body.encode(), None)[1][0].tobytes() == x.tobytes()
    assert len(scan_buffers.kept) <= scan_buffers.KEPT_VALUES


_mutation = st.tuples(st.sampled_from(["replace", "insert", "delete"]), st.floats(0, 1),
                      st.sampled_from(list(b'0123456789-+.eE,[]{}" \\\n:aN')))


@settings(max_examples=400, deadline=None)
@given(st.lists(_mutation, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_mutated_bodies_get_the_parsers_answer(mutations, swap, nested):
    """A valid body with a few bytes replaced, inserted or deleted anywhere: decode answers as the
    JSON parser does, the same arrays or the same error."""
    entry = _entry("xy")
    request = _body(2, "xy")
    if nested:
        _nest(request, ("x", 2), ("y", 2))
    if swap:
        request["inputs"].reverse()
    body = bytearray(json.dumps(request).encode())
    for op, where, byte in mutations:
        at = int(where * (len(body) - 1))
        if op == "replace":
            body[at] = byte
        elif op == "insert":
            body.insert(at, byte)
        else:
            del body[at]
    assert_same(entry, bytes(body))
