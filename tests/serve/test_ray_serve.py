"""The Ray Serve deployment (against a local Ray instance, when ray[serve] is installed) and the
batch runner it shares with `scriptc serve`."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import load
from scriptc.runtime.server import model_entry, run_batch

from ..models import MLP


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("ray") / "mlp.sc"
    torch.jit.trace(MLP().eval(), torch.randn(3, 16)).save(path)
    return path


class CountingModel:
    def __init__(self, model):
        self.model, self.signatures, self.calls = model, model.signatures, []

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


def test_run_batch_raises_what_the_model_raises(archive):
    entry = model_entry("mlp", load(archive))
    with pytest.raises(torch.SignatureError, match="dim 1 is 5, not 16"):
        run_batch(entry, [[np.ones((1, 16), np.float32)], [np.ones((1, 5), np.float32)], [np.ones((1, 5), np.float32)]])


def _post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_ray_serve_deployment_with_replicas_batches_and_answers_like_the_runtime(archive):
    ray = pytest.importorskip("ray")
    serve = pytest.importorskip("ray.serve")
    httpclient = pytest.importorskip("tritonclient.http")
    from scriptc.runtime.ray_serve import deployment

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(deployment(str(archive), num_replicas=2, max_batch=8, batch_wait_s=0.005), route_prefix="/")
        reference = load(archive)
        url = f"127.0.0.1:{port}"
        client = httpclient.InferenceServerClient(url)
        assert client.is_server_live() and client.is_model_ready("mlp")
        meta = client.get_model_metadata("mlp")
        assert meta["inputs"][0]["shape"] == [-1, 16] and meta["outputs"][0]["datatype"] == "FP32"
        name = meta["inputs"][0]["name"]
        rng = np.random.default_rng(1)
        inputs = [rng.standard_normal((int(rng.integers(1, 4)), 16)).astype(np.float32) for _ in range(16)]
        errors = []

        def ask(i: int):
            c = httpclient.InferenceServerClient(url)
            for binary in (True, False):
                inp = httpclient.InferInput(name, list(inputs[i].shape), "FP32")
                inp.set_data_from_numpy(inputs[i], binary_data=binary)
                try:
                    got = c.infer("mlp", [inp], request_id=f"r{i}")
                    if not np.allclose(got.as_numpy("output0"), reference(inputs[i]), rtol=1e-5, atol=1e-6):
                        errors.append(f"wrong answer for request {i}")
                    if got.get_response()["id"] != f"r{i}":
                        errors.append("id not echoed")
                except Exception as exc:
                    errors.append(repr(exc))
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        status, body = _post(f"http://{url}/v2/models/mlp/infer", {"inputs": [
            {"name": name, "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]})
        assert status == 400 and "expected shape" in body["error"]
        status, body = _post(f"http://{url}/v2/models/nope/infer", {"inputs": []})
        assert status == 404 and "error" in body
    finally:
        serve.shutdown()
        ray.shutdown()
