"""The Ray Serve deployment, against a local Ray instance (skipped where ray[serve] is not installed),
and the batch runner it shares with `scriptc serve`."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from scriptc.errors import ServeError
from scriptc.runtime import load
from scriptc.serving.batcher import run_batch
from scriptc.serving.protocol import model_entry

from .running import run_threads


class CountingModel:
    def __init__(self, model):
        self.model, self.calls = model, []

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, *inputs):
        self.calls.append(inputs[0].shape)
        return self.model(*inputs)


def test_run_batch_stacks_agreeing_requests_and_splits_them_back(archive):
    model = CountingModel(load(archive))
    entry = model_entry("mlp", model)
    assert entry.batchable
    rng = np.random.default_rng(0)
    requests = [[rng.standard_normal((rows, 16)).astype(np.float32)] for rows in (1, 3, 2)]
    results = run_batch(entry, requests)
    assert model.calls == [(6, 16)]
    for (x,), (y,) in zip(requests, results):
        np.testing.assert_allclose(y, model.model(x), rtol=1e-5, atol=1e-6)


def test_run_batch_answers_requests_the_signature_refuses_with_a_400_and_the_others_with_results(archive):
    entry = model_entry("mlp", load(archive))
    fits, misfit = np.ones((1, 16), np.float32), np.ones((1, 5), np.float32)
    results = run_batch(entry, [[fits], [misfit], [misfit]])
    np.testing.assert_allclose(results[0][0], entry.model(fits), rtol=1e-6)
    for refused in results[1:]:
        assert isinstance(refused, ServeError) and refused.status == 400 and "dim 1 is 5, not 16" in str(refused)


def _request(url: str, body: bytes | None = None, timeout: float = 60):
    """(status, body) of a GET (no body) or POST; a connection that fails is (None, its error)."""
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
        return None, repr(e).encode()


@pytest.fixture(scope="module")
def ray_app(archive):
    """Two replicas of one CPU each, under the route prefix /mlp."""
    ray = pytest.importorskip("ray")
    serve = pytest.importorskip("ray.serve")
    from scriptc.serving.ray_serve import deployment

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(deployment(str(archive), num_replicas=2, max_batch=8, batch_wait_s=0.01, timeout_s=10,
                             ray_actor_options={"num_cpus": 1}), name="mlp", route_prefix="/mlp")
        yield ray, f"127.0.0.1:{port}/mlp"
    finally:
        serve.shutdown()
        ray.shutdown()


def _body(x: np.ndarray, name: str = "x") -> bytes:
    return json.dumps({"id": "r", "inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                                              "data": x.ravel().tolist()}]}).encode()


def test_the_protocol_below_a_route_prefix(archive, ray_app):
    httpclient = pytest.importorskip("tritonclient.http")
    _, url = ray_app
    client = httpclient.InferenceServerClient(url)
    assert client.is_server_live() and client.is_model_ready("mlp")
    assert client.get_server_metadata()["extensions"] == ["binary_tensor_data"]
    meta = client.get_model_metadata("mlp")
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}]
    reference = load(archive)
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    for binary in (True, False):
        inp = httpclient.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=binary)
        got = client.infer("mlp", [inp], request_id="r7")
        np.testing.assert_allclose(got.as_numpy("output0"), reference(x), rtol=1e-5, atol=1e-6)
        assert got.get_response()["id"] == "r7"
    status, body = _request(f"http://{url}/v2/models/mlp/infer", _body(np.ones((1, 3), np.float32)))
    assert status == 400 and "expected shape [-1, 16]" in json.loads(body)["error"]
    status, body = _request(f"http://{url}/v2/models/nope/infer", b'{"inputs": []}')
    assert status == 404 and "error" in json.loads(body)
    # A body past the limit is refused on its Content-Length, before it is read.
    host, port = url.split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(b"POST /mlp/v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (65 << 20))
        assert conn.recv(4096).startswith(b"HTTP/1.1 413")


def _replica_metrics(url: str) -> dict:
    """Each replica's own counters, by its thread count and requests (a GET lands on any replica)."""
    seen = {}
    for _ in range(20):
        status, text = _request(f"http://{url}/metrics")
        assert status == 200
        text = text.decode()
        requests = sum(int(n) for n in re.findall(r'scriptc_requests_total\{model="mlp",status="200"\} (\d+)', text))
        batches = int(re.search(r'scriptc_batch_size_count\{model="mlp"\} (\d+)', text).group(1))
        threads = int(re.search(r'scriptc_threads\{model="mlp"\} (\d+)', text).group(1))
        seen[(requests, batches)] = threads
    return seen


def test_concurrent_requests_are_batched_by_replicas_of_one_thread_each(ray_app):
    _, url = ray_app
    rng = np.random.default_rng(2)
    bodies = [_body(rng.standard_normal((1, 16)).astype(np.float32)) for _ in range(32)]
    results = []

    def client(i):
        for _ in range(8):
            results.append(_request(f"http://{url}/v2/models/mlp/infer", bodies[i])[0])
    run_threads(client, [(i,) for i in range(32)])
    assert results.count(200) == 256
    replicas = _replica_metrics(url)
    assert set(replicas.values()) == {1}  # one reserved CPU: one thread, whatever the node has
    assert sum(requests for requests, _ in replicas) > sum(batches for _, batches in replicas)


def test_killing_a_replica_under_load_leaves_no_request_hanging(archive, ray_app):
    ray, url = ray_app
    reference = load(archive)
    x = np.random.default_rng(3).standard_normal((2, 16)).astype(np.float32)
    expected = reference(x)
    body = _body(x)
    outcomes, stop = [], time.time() + 12

    def client():
        while time.time() < stop:
            started = time.time()
            status, answer = _request(f"http://{url}/v2/models/mlp/infer", body, timeout=45)
            outcomes.append((status, answer, time.time() - started))
    threads = [threading.Thread(target=client) for _ in range(16)]
    for t in threads:
        t.start()
    time.sleep(3)
    replicas = [a for a in ray.util.list_named_actors(all_namespaces=True) if "SERVE_REPLICA" in a["name"]]
    ray.kill(ray.get_actor(replicas[0]["name"], namespace=replicas[0]["namespace"]), no_restart=True)
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert outcomes and all(status is not None for status, _, _ in outcomes), \
        [answer for status, answer, _ in outcomes if status is None][:3]  # no hang, no dropped connection
    for status, answer, _ in outcomes:
        if status == 200:
            np.testing.assert_allclose(np.array(json.loads(answer)["outputs"][0]["data"], np.float32).reshape(2, 4),
                                       expected, rtol=1e-5, atol=1e-6)
        else:
            assert answer, status  # a failure the client can read
    assert sum(status == 200 for status, _, _ in outcomes) > len(outcomes) // 2
