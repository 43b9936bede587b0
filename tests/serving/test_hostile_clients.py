"""Clients that make mistakes, or mean harm: every request gets a 4xx naming what is wrong (never a
500), and the server answers the next client as before. Raw HTTP for what tritonclient cannot send."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from typing import Optional

import numpy as np
import pytest

import scriptc as torch

from ..models import MLP
from .running import Running, post

httpclient = pytest.importorskip("tritonclient.http")
pytest.importorskip("uvicorn")


class _Gated(torch.nn.Module):
    """Inputs of three dtypes, traced: bool and int64 tensors beside the float one."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, keep, index):
        return torch.where(keep, self.fc(x), 0.0) + index.unsqueeze(1).float()


class _Scaled(torch.nn.Module):
    def forward(self, x, scale: Optional[torch.Tensor] = None, times: int = 1):
        if scale is not None:
            return x * scale * times
        return (x + 1.0) * times


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("hostile")
    torch.jit.trace(MLP().eval(), torch.randn(3, 16)).save(folder / "mlp.sc")
    example = (torch.randn(2, 4), torch.tensor([[True, False, True]] * 2), torch.tensor([1, 2]))
    torch.jit.trace(_Gated().eval(), example).save(folder / "gated.sc")
    torch.jit.script(_Scaled()).save(folder / "scaled.sc")
    running = Running([folder / "mlp.sc", folder / "gated.sc", folder / "scaled.sc"], "--header-timeout-s", "2",
                      "--access-log")
    yield running
    if running.proc.poll() is None:
        running.stop()


def _infer(server, body, headers=None, model: str = "mlp"):
    return post(f"http://{server.url}/v2/models/{model}/infer", body if isinstance(body, bytes) else
                json.dumps(body).encode(), headers)


def _x(**changes) -> dict:
    item = {"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}
    item.update(changes)
    return item


def assert_alive(server) -> None:
    """The server still answers: liveness, and a good request."""
    client = httpclient.InferenceServerClient(server.url)
    assert client.is_server_live()
    status, payload = _infer(server, {"inputs": [_x()]})
    assert status == 200 and len(json.loads(payload)["outputs"][0]["data"]) == 4


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("body, message", [
    ({"inputs": [_x(shape=[1, 15], data=[0.5] * 15)]}, r"expected shape [-1, 16], got [1, 15]"),
    ({"inputs": [_x(shape=[16], data=[0.5] * 16)]}, r"expected shape [-1, 16], got [16]"),
    ({"inputs": [_x(), _x()]}, "input 'x' appears twice"),
    (b'{"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": ' + DEEP.encode() + b"}]}",
     "JSON nested 5003 levels deep"),
    (b'{"inputs": [], "parameters": ' + DEEP.encode() + b"}", "JSON nested 5001 levels deep"),
    ({"inputs": [_x()], "parameters": [1]}, "the request's 'parameters' must be a JSON object, got list"),
    ({"inputs": [_x(parameters="binary")]}, "input 'x': 'parameters' must be a JSON object, got str"),
    ({"inputs": [_x()], "outputs": [{"name": "output0", "parameters": 3}]},
     "output 'output0': 'parameters' must be a JSON object, got int"),
    ({"inputs": [_x()], "outputs": ["output0"]}, "has no output None"),
    ({"inputs": [_x(shape=[True, 16])]}, "shape must be a list of non-negative integers, got [True, 16]"),
    ({"inputs": [_x(shape=[1.0, 16])]}, "shape must be a list of non-negative integers"),
    ({"inputs": [_x(shape=[-1, 16])]}, "shape must be a list of non-negative integers"),
    ({"inputs": [_x(shape="1x16")]}, "shape must be a list of non-negative integers"),
    ({"inputs": [_x(shape=[10 ** 12, 16], parameters={"binary_data_size": 64})]}, "does not match shape"),
    ({"inputs": [_x(parameters={"binary_data_size": True})]}, "binary_data_size True does not match"),
    ({"inputs": [_x(datatype=["FP32"])]}, "unsupported datatype ['FP32']"),
    ({"inputs": [_x(name={"x": 1})]}, "has no input {'x': 1}"),
    ({"inputs": [_x(data={"a": 1})]}, "data does not fit FP32"),
    ({"inputs": [_x(data=[[0.5] * 8, [0.5] * 7])]}, "data does not fit FP32"),
    ({"inputs": [_x(data=[0.5] * 15)]}, "15 elements for shape [1, 16]"),
    ({"inputs": [7]}, "each input must be an object"),
    ({"inputs": {"x": 1}}, "needs an 'inputs' list"),
    ({"inputs": [_x()], "id": [1, 2]}, "'id' must be a string"),
    ({"inputs": []}, "missing input(s) ['x']"),
    (b"\xff\xfe{", "malformed JSON"),
])
def test_client_mistakes_are_4xx_and_the_server_lives_on(server, body, message):
    status, payload = _infer(server, body)
    assert status == 400, payload[:300]
    assert message in json.loads(payload)["error"]
    assert_alive(server)


@pytest.mark.parametrize("headers, status, message", [
    ({"Inference-Header-Content-Length": "x1"}, 400, "must be a number"),
    ({"Inference-Header-Content-Length": "1" * 40}, 400, "larger than the body"),
    ({"Content-Length": "999999999999"}, 413, "request body over"),
])
def test_bad_headers_are_4xx(server, headers, status, message):
    conn = http.client.HTTPConnection(server.url, timeout=10)
    body = json.dumps({"inputs": [_x()]}).encode()
    conn.putrequest("POST", "/v2/models/mlp/infer")
    for name, value in {"Content-Length": str(len(body)), **headers}.items():
        conn.putheader(name, value)
    conn.endheaders()
    if "Content-Length" not in headers:
        conn.send(body)
    response = conn.getresponse()
    assert response.status == status and message in json.loads(response.read())["error"]
    conn.close()
    assert_alive(server)


def test_metadata_types_inputs_as_the_signature_does_and_marks_optional_ones(server):
    client = httpclient.InferenceServerClient(server.url)
    gated = client.get_model_metadata("gated")
    assert gated["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]},
                               {"name": "keep", "datatype": "BOOL", "shape": [-1, 3]},
                               {"name": "index", "datatype": "INT64", "shape": [-1]}]
    assert gated["outputs"] == [{"name": "output0", "datatype": "FP32", "shape": [-1, 3]}]
    scaled = client.get_model_metadata("scaled")
    assert scaled["inputs"][1] == {"name": "scale", "datatype": "FP32", "shape": [-1], "optional": True}
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    keep = np.array([[True, False, True]] * 2)
    index = np.array([3, 4], np.int64)
    inputs = []
    for name, value, datatype in (("x", x, "FP32"), ("keep", keep, "BOOL"), ("index", index, "INT64")):
        inputs.append(httpclient.InferInput(name, list(value.shape), datatype))
        inputs[-1].set_data_from_numpy(value)
    got = client.infer("gated", inputs).as_numpy("output0")
    assert got.shape == (2, 3) and np.all(got[:, 1] == index)  # (keep's second column is False)


def test_an_optional_input_may_be_left_out(server):
    client = httpclient.InferenceServerClient(server.url)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    plain = httpclient.InferInput("x", [2, 3], "FP32")
    plain.set_data_from_numpy(x)
    np.testing.assert_array_equal(client.infer("scaled", [plain]).as_numpy("output0"), x + 1)
    scale = httpclient.InferInput("scale", [3], "FP32")
    scale.set_data_from_numpy(np.full(3, 2.0, np.float32))
    np.testing.assert_array_equal(client.infer("scaled", [plain, scale]).as_numpy("output0"), x * 2)


def test_an_input_with_a_default_may_be_left_out(server):
    client = httpclient.InferenceServerClient(server.url)
    assert client.get_model_metadata("scaled")["inputs"][2] == {"name": "times", "datatype": "INT64", "shape": [1],
                                                                "optional": True}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    plain = httpclient.InferInput("x", [2, 3], "FP32")
    plain.set_data_from_numpy(x)
    times = httpclient.InferInput("times", [1], "INT64")
    times.set_data_from_numpy(np.array([3], np.int64))
    np.testing.assert_array_equal(client.infer("scaled", [plain, times]).as_numpy("output0"), (x + 1) * 3)
    np.testing.assert_array_equal(client.infer("scaled", [plain]).as_numpy("output0"), x + 1)


def test_inputs_whose_batch_dims_differ_are_a_400_and_requests_beside_them_are_answered(server):
    x = {"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [0.5] * 8}
    keep = {"name": "keep", "shape": [3, 3], "datatype": "BOOL", "data": [True] * 9}
    index = {"name": "index", "shape": [2], "datatype": "INT64", "data": [1, 2]}
    url = f"http://{server.url}/v2/models/gated/infer"
    status, body = post(url, json.dumps({"inputs": [x, keep, index]}).encode())
    assert status == 400 and "input 'keep' expects size 2 in dim 0" in json.loads(body)["error"]
    fits = dict(keep, shape=[2, 3], data=[True] * 6)
    assert post(url, json.dumps({"inputs": [x, fits, index]}).encode())[0] == 200


@pytest.mark.parametrize("path, method", [("/v2/models/mlp/versions/2/infer", "POST"),
                                          ("/v2/models/mlp/versions/2", "GET"), ("/v2/models/mlp/versions/2/ready", "GET")])
def test_a_version_the_model_lacks_is_404(server, path, method):
    body = json.dumps({"inputs": [_x()]}).encode() if method == "POST" else None
    request = urllib.request.Request(f"http://{server.url}{path}", data=body, method=method)
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)
    assert answer.value.code == 404 and "has no version '2'" in json.loads(answer.value.read())["error"]


def _connect(server) -> socket.socket:
    host, port = server.url.split(":")
    return socket.create_connection((host, int(port)), timeout=15)


def _until_closed(conn: socket.socket) -> tuple[bytes, float]:
    """What the server sent before it closed the connection, and how long that took."""
    started, received = time.time(), b""
    while True:
        try:
            chunk = conn.recv(4096)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return received, time.time() - started


def test_a_client_sending_headers_a_byte_a_second_is_dropped(server):
    conn = _connect(server)
    request = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
    started = time.time()
    try:
        for byte in request:
            conn.sendall(bytes([byte]))
            conn.settimeout(1.0)
            try:
                if conn.recv(4096).startswith(b"HTTP/1.1 408"):
                    break
            except socket.timeout:
                continue
        else:
            pytest.fail("the slow client was never dropped")
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert time.time() - started < 10
    conn.close()
    assert_alive(server)


def test_a_client_that_connects_and_says_nothing_is_dropped(server):
    conn = _connect(server)
    received, seconds = _until_closed(conn)
    conn.close()
    assert received.startswith(b"HTTP/1.1 408") and seconds < 10
    assert_alive(server)


def test_oversized_headers_are_refused(server):
    conn = _connect(server)
    conn.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * (100 << 10) + b"\r\n\r\n")
    received, _ = _until_closed(conn)
    conn.close()
    assert received.startswith(b"HTTP/1.1 431")
    assert_alive(server)


def test_the_banner_and_the_access_log(server):
    """(Stops the module's server: the last test of the file.)"""
    assert _infer(server, {"inputs": [_x()]})[0] == 200
    assert server.stop() == 0
    out = server.output
    assert f"model 'mlp' (x: FP32 [-1, 16]) -> (output0: FP32 [-1, 4]) at http://{server.url}/v2/models/mlp/infer" in out
    assert "scale: any [any] (optional)" in out
    assert "batches of up to 32 waiting at most 2 ms, queue 256 per model" in out
    assert '"POST /v2/models/mlp/infer HTTP/1.1" 200' in out and '"POST /v2/models/mlp/infer HTTP/1.1" 400' in out

