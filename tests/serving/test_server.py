"""The KServe v2 server, started for real on a loopback port and driven with tritonclient.http."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scriptc as torch
from scriptc.runtime import load

from .running import Running, post as _post, run_threads

httpclient = pytest.importorskip("tritonclient.http")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from scriptc.serving.protocol import DATATYPES, _json_array  # noqa: E402  (needs the serve extra)


@pytest.fixture(scope="module")
def server(archive):
    running = Running(archive, "--max-batch", "16", "--batch-delay-ms", "3")
    yield running
    assert running.stop() == 0


def test_health_metadata_and_infer_json_and_binary(server, archive):
    client = httpclient.InferenceServerClient(server.url)
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("mlp")
    meta = client.get_model_metadata("mlp")
    assert meta["inputs"][0]["datatype"] == "FP32" and meta["inputs"][0]["shape"] == [-1, 16]
    reference = load(archive)
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    for binary in (True, False):
        inp = httpclient.InferInput(meta["inputs"][0]["name"], list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=binary)
        out = httpclient.InferRequestedOutput("output0", binary_data=binary)
        result = client.infer("mlp", [inp], outputs=[out], request_id="req-7")
        np.testing.assert_allclose(result.as_numpy("output0"), reference(x), rtol=1e-6)
        assert result.get_response()["id"] == "req-7"


def test_concurrent_clients_are_batched_and_answered_correctly(server, archive):
    """The issue's load test: 64 clients for 10 s, half sending JSON and half binary tensors, every
    answer checked."""
    reference = load(archive)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((int(rng.integers(1, 4)), 16)).astype(np.float32) for _ in range(64)]
    errors, answers = [], {}
    name = httpclient.InferenceServerClient(server.url).get_model_metadata("mlp")["inputs"][0]["name"]
    stop = time.time() + 10

    def client_loop(i):
        client = httpclient.InferenceServerClient(server.url)
        while time.time() < stop:
            inp = httpclient.InferInput(name, list(inputs[i].shape), "FP32")
            inp.set_data_from_numpy(inputs[i], binary_data=i % 2 == 0)
            try:
                got = client.infer("mlp", [inp]).as_numpy("output0")
                if not np.allclose(got, reference(inputs[i]), rtol=1e-5, atol=1e-6):
                    errors.append(f"wrong answer for client {i}")
                answers[i] = answers.get(i, 0) + 1
            except Exception as exc:
                errors.append(repr(exc))
    run_threads(client_loop, [(i,) for i in range(64)])
    assert not errors and len(answers) == 64
    metrics = urllib.request.urlopen(f"http://{server.url}/metrics", timeout=10).read().decode()
    assert 'scriptc_requests_total{model="mlp",status="200"}' in metrics and "scriptc_batch_size_bucket" in metrics
    buckets = [line for line in metrics.splitlines() if line.startswith('scriptc_batch_size_bucket{model="mlp",le="1"}')]
    total = [line for line in metrics.splitlines() if line.startswith("scriptc_batch_size_count")]
    assert int(buckets[0].split()[-1]) < int(total[0].split()[-1])  # some batches held more than one request


@pytest.mark.parametrize("path, body, headers, status, message", [
    ("/v2/models/nope/infer", b"{}", {}, 404, "unknown model"),
    ("/v2/models/mlp/infer", b"{not json", {}, 400, "malformed JSON"),
    ("/v2/models/mlp/infer", json.dumps({"inputs": [{"name": "zzz", "shape": [1, 16], "datatype": "FP32",
                                                     "data": [0] * 16}]}).encode(), {}, 400, "has no input"),
    ("/v2/models/mlp/infer", json.dumps({"inputs": [{"name": "x", "shape": [1, 15], "datatype": "FP32",
                                                     "data": [0] * 15}]}).encode(), {}, 400, "expected shape"),
    ("/v2/models/mlp/infer", json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "INT64",
                                                     "data": [0] * 16}]}).encode(), {}, 400, "expected datatype"),
    ("/v2/models/mlp/infer", json.dumps({"inputs": [{"name": "x", "shape": [2, 16], "datatype": "FP32",
                                                     "data": [0] * 16}]}).encode(), {}, 400, "elements"),
    ("/v2/models/mlp/infer", json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                                                     "data": [0] * 16}], "outputs": [{"name": "q"}]}).encode(), {},
     400, "has no output"),
    ("/v2/models/mlp/infer", b"{}", {"Inference-Header-Content-Length": "99"}, 400, "larger than the body"),
])
def test_malformed_requests_get_json_errors(server, path, body, headers, status, message):
    got_status, payload = _post(f"http://{server.url}{path}", body, headers)
    assert got_status == status and message in json.loads(payload)["error"]


def test_a_repeated_binary_header_reads_each_requests_own_data(server, archive):
    """The server checks a binary request's JSON header once and reuses that; the data, and whether
    the body holds enough of it, are still each request's own."""
    reference = load(archive)
    head = json.dumps({"inputs": [{"name": "x", "shape": [2, 16], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 128}}]}).encode()
    headers = {"Inference-Header-Content-Length": str(len(head))}
    url = f"http://{server.url}/v2/models/mlp/infer"
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal((2, 16)).astype(np.float32)
        status, payload = _post(url, head + x.tobytes(), headers)
        assert status == 200
        got = np.array(json.loads(payload)["outputs"][0]["data"], np.float32).reshape(2, -1)
        np.testing.assert_allclose(got, reference(x), rtol=1e-6)
    status, payload = _post(url, head + x.tobytes()[:100], headers)
    assert status == 400 and "runs past the 100 bytes" in json.loads(payload)["error"]


def test_json_that_only_python_writes_is_still_read(server, archive):
    """NaN literals (json.dumps writes them for float('nan')) both ways, ids past 64 bits, and invalid
    UTF-8 (a 400)."""
    x = np.ones((1, 16), np.float32)
    x[0, 3] = np.nan
    body = json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": x.ravel().tolist()}]})
    assert "NaN" in body
    status, payload = _post(f"http://{server.url}/v2/models/mlp/infer", body.encode())
    assert status == 200 and b"NaN" in payload  # not orjson's null
    got = np.array(json.loads(payload)["outputs"][0]["data"], np.float32).reshape(1, -1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(load(archive)(x)))
    huge_id = json.dumps({"id": 2 ** 70, "inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32",
                                                      "data": [0.5] * 16}]})
    status, payload = _post(f"http://{server.url}/v2/models/mlp/infer", huge_id.encode())
    assert status == 200 and json.loads(payload)["id"] == 2 ** 70
    status, payload = _post(f"http://{server.url}/v2/models/mlp/infer", b'{"inputs": "\xff\xfe"}')
    assert status == 400 and "malformed JSON" in json.loads(payload)["error"]


def test_body_limit_and_full_queue(archive, tmp_path):
    """A body past the limit is a 413; a request that finds its model's queue full, a 503 at once
    with Retry-After (the slow model holds each request ~0.5 s: one runs, one waits, the rest are
    turned away)."""
    torch.jit.script(slow).save(tmp_path / "slow.sc")
    running = Running([archive, tmp_path / "slow.sc"], "--max-body-mb", "0.001", "--max-queue", "1",
                      "--max-batch", "1")
    try:
        big = json.dumps({"inputs": [{"name": "x", "shape": [100, 16], "datatype": "FP32",
                                      "data": [0.0] * 1600}]}).encode()
        status, payload = _post(f"http://{running.url}/v2/models/mlp/infer", big)
        assert status == 413 and "error" in json.loads(payload)
        busy = json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [100000.0]}]}).encode()
        statuses, retry_after = [], set()

        def one():
            conn = http.client.HTTPConnection(running.url, timeout=60)
            conn.request("POST", "/v2/models/slow/infer", busy)
            response = conn.getresponse()
            statuses.append(response.status)
            if response.status == 503:
                retry_after.add(response.getheader("Retry-After"))
                assert "queue is full" in json.loads(response.read())["error"]
            conn.close()
        run_threads(one, [()] * 12)
        assert statuses.count(200) >= 2 and statuses.count(503) >= 6 and retry_after == {"1"}, statuses
    finally:
        assert running.stop() == 0


def test_a_batch_stops_waiting_when_requests_stop_coming(archive):
    """A few clients' requests form a batch that runs as soon as no more arrive, not after the whole
    batch delay (here a second, which every request would otherwise wait out)."""
    running = Running(archive, "--batch-delay-ms", "1000", "--max-batch", "32")
    try:
        small = json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}]}
                           ).encode()
        timings = []

        def one():
            started = time.perf_counter()
            status, _ = _post(f"http://{running.url}/v2/models/mlp/infer", small)
            timings.append((status, time.perf_counter() - started))
        for _ in range(3):
            run_threads(one, [()] * 8)
        assert len(timings) == 24 and {status for status, _ in timings} == {200}
        assert max(seconds for _, seconds in timings) < 0.5
    finally:
        assert running.stop() == 0


def test_sigterm_drains_in_flight_requests(archive):
    running = Running(archive, "--batch-delay-ms", "300", "--max-batch", "64")
    small = json.dumps({"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.0] * 16}]}).encode()
    results = []
    t = threading.Thread(target=lambda: results.append(_post(f"http://{running.url}/v2/models/mlp/infer", small)[0]))
    t.start()
    time.sleep(0.1)
    assert running.stop() == 0
    t.join(30)
    assert results == [200]


def failing(x):
    if float(x.sum()) > 1000.0:
        raise ValueError("input too large")
    return x * 2


def test_model_errors_give_500_and_the_server_lives_on(tmp_path):
    path = tmp_path / "failing.sc"
    torch.jit.script(failing).save(path)
    running = Running(path)
    try:
        def body(value):
            return json.dumps({"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [value, value]}]}
                              ).encode()
        status, payload = _post(f"http://{running.url}/v2/models/failing/infer", body(5000.0))
        assert status == 500 and "input too large" in json.loads(payload)["error"]
        status, payload = _post(f"http://{running.url}/v2/models/failing/infer", body(1.0))
        assert status == 200 and json.loads(payload)["outputs"][0]["data"] == [2.0, 2.0]
    finally:
        assert running.stop() == 0


def slow(x):
    y = x
    for _ in range(int(x.sum())):
        y = y * 1.0
    return y


def test_slow_requests_time_out_with_504(tmp_path):
    path = tmp_path / "slow.sc"
    torch.jit.script(slow).save(path)
    running = Running(path, "--timeout-s", "0.05")
    try:
        body = json.dumps({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [200000.0]}]}).encode()
        status, payload = _post(f"http://{running.url}/v2/models/slow/infer", body)
        assert status == 504 and "did not answer" in json.loads(payload)["error"]
    finally:
        assert running.stop() == 0


def test_threads_caps_blas_while_the_server_runs_and_restores_it(archive):
    import asyncio

    from threadpoolctl import threadpool_info

    from scriptc.serving.app import Server, ServerConfig

    def blas_threads():
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    before = blas_threads()
    server = Server([archive], config=ServerConfig(threads=1))

    async def running():
        server.start()
        assert blas_threads() and all(n == 1 for n in blas_threads())
        server.stop()
    asyncio.run(running())
    assert blas_threads() == before


_json_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2 ** 70, 2 ** 70),
                         st.booleans(), st.none(), st.text(max_size=3))


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.lists(_json_values, max_size=8), st.lists(st.lists(st.floats(), max_size=2), max_size=3)),
       datatype=st.sampled_from(sorted(DATATYPES)))
def test_json_data_converts_as_numpy_converts_it(data, datatype):
    """The fast path for flat number lists gives numpy's array, or numpy's refusal, for any JSON data."""
    dtype = np.dtype(DATATYPES[datatype])
    with np.errstate(over="ignore", invalid="ignore"):  # 1e300 as FP16 overflows, both ways alike
        try:
            expected = np.asarray(data, dtype=dtype).reshape(-1)
        except (ValueError, TypeError, OverflowError) as exc:
            with pytest.raises(type(exc)):
                _json_array(data, dtype)
            return
        got = _json_array(data, dtype)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes() and got.flags.writeable
