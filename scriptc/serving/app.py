"""The HTTP application of `scriptc serve`: the Open Inference Protocol's routes over the loaded models.

An ASGI app (starlette for the few light routes, plain ASGI for infer). Bad requests get a 4xx with
a JSON `{"error": ...}`; a full queue, or any request once the server is draining after SIGTERM, a
503 with Retry-After (and, draining, `Connection: close`); a body that does not arrive within the
request timeout a 408.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from threadpoolctl import threadpool_limits

from scriptc.errors import ServeError
from scriptc.runtime.model import load

from .batcher import Batcher
from .metrics import CONTENT_TYPE, Metrics
from .protocol import MODEL_VERSION, ModelEntry, decode, dump_json, encode, metadata, model_entry

RETRY_AFTER_S = 1


@dataclass
class ServerConfig:
    max_batch: int = 32
    batch_delay_ms: float = 2.0
    max_queue: int = 256
    timeout_s: float = 30.0                  # a request's body, and its answer, each within this
    max_body_bytes: int = 64 << 20
    # Threads per model call, for scriptc's kernels and for BLAS. A server runs many requests at once
    # (batched, beside the event loop), so intra-op threads mostly contend with request handling:
    # measured here (MLP, 64 clients, 2 cores) batching gains 2.4x with 1 thread, 1.4x with 2.
    threads: int | None = 1
    header_timeout_s: float = 5.0            # a request's headers all arrive within this (http.py)
    max_header_bytes: int = 64 << 10
    drain_s: float = 2.0                     # after SIGTERM, idle connections stay this long to hear 503
    access_log: bool = False


class Server:
    """The models and the request logic, independent of the HTTP framework."""

    def __init__(self, paths: list, names: list | None = None, config: ServerConfig | None = None):
        self.config = config or ServerConfig()
        self.models: dict[str, ModelEntry] = {}
        self.metrics = Metrics()
        self.batchers: dict[str, Batcher] = {}
        self.draining = False
        self._blas_limit = None
        names = names or []
        for i, path in enumerate(paths):
            name = names[i] if i < len(names) else Path(path).stem
            if name in self.models:
                raise ServeError(f"two models are named '{name}'; pass --name", 400)
            entry = model_entry(name, load(path, threads=self.config.threads))
            self.models[name] = entry
            c = self.config
            self.batchers[name] = Batcher(entry, self.metrics, c.max_batch, c.batch_delay_ms, c.max_queue, c.timeout_s)

    def start(self) -> None:
        if self.config.threads is not None:  # BLAS's threads capped process-wide while this server runs
            self._blas_limit = threadpool_limits(limits=self.config.threads, user_api="blas")
        for batcher in self.batchers.values():
            batcher.start()

    def stop(self) -> None:
        for batcher in self.batchers.values():
            batcher.stop()
        if self._blas_limit is not None:
            self._blas_limit.restore_original_limits()

    def model(self, name: str, version: str | None = None) -> ModelEntry:
        """The model a request names (and its version, where the path names one: each model has
        one, "1"); ServeError 404 for one the server does not hold."""
        if name not in self.models:
            raise ServeError(f"unknown model '{name}'", 404)
        if version is not None and version != MODEL_VERSION:
            raise ServeError(f"model '{name}' has no version '{version}' (versions: ['{MODEL_VERSION}'])", 404)
        return self.models[name]


def create_app(server: Server):
    """The ASGI application for a Server."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    def error(exc: ServeError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    async def live(request: Request):
        return JSONResponse({"live": True})

    async def ready(request: Request):
        return JSONResponse({"ready": True})

    async def root(request: Request):
        return JSONResponse(server_metadata())

    async def model_metadata(request: Request):
        try:
            return JSONResponse(metadata(server.model(request.path_params["name"], request.path_params.get("version"))))
        except ServeError as exc:
            return error(exc)

    async def model_ready(request: Request):
        try:
            server.model(request.path_params["name"], request.path_params.get("version"))
        except ServeError as exc:
            return error(exc)
        return JSONResponse({"name": request.path_params["name"], "ready": True})

    async def metrics(request: Request):
        depths = {name: batcher.depth for name, batcher in server.batchers.items()}
        return PlainTextResponse(server.metrics.render(depths), media_type=CONTENT_TYPE)

    routes = [Route("/v2/health/live", live), Route("/v2/health/ready", ready), Route("/v2", root),
              Route("/v2/models/{name}", model_metadata), Route("/v2/models/{name}/versions/{version}", model_metadata),
              Route("/v2/models/{name}/ready", model_ready),
              Route("/v2/models/{name}/versions/{version}/ready", model_ready),
              Route("/metrics", metrics)]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        server.start()
        try:
            yield
        finally:
            server.stop()

    return _with_infer_route(server, Starlette(routes=routes, lifespan=lifespan))


def server_metadata() -> dict:
    """The server metadata response of the protocol (GET /v2)."""
    from scriptc import __version__
    return {"name": "scriptc", "version": __version__, "extensions": ["binary_tensor_data"]}


INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer")
_DRAINING = dump_json({"error": "the server is shutting down"})


def _with_infer_route(server: Server, app):
    """The ASGI app: POST .../infer handled here, in plain ASGI, everything else by `app`; every
    request answered 503 once the server drains.

    The hot path skips starlette's router, middleware and Request/Response objects - a third of
    the event loop's time per request (0.15 of 0.47 ms, measured with the MLP at 64 clients)."""
    config = server.config

    async def infer_app(scope, receive, send):
        if scope["type"] == "http" and server.draining:
            await respond(send, 503, _DRAINING, b"application/json", [(b"connection", b"close")])
            return
        match = INFER_PATH.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if match is None:
            await app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await respond(send, 405, b'{"error": "infer takes POST"}', b"application/json")
            return
        start = time.perf_counter()
        name = match.group(1)
        status = 200
        try:
            entry = server.model(name, match.group(2))
            headers = dict(scope["headers"])
            body = await read_body(receive, headers, config.max_body_bytes, config.timeout_s)
            parsed, inputs = decode(entry, body, header_length(headers.get(b"inference-header-content-length")))
            outputs = await server.batchers[name].infer(inputs)
            head, binary = encode(entry, parsed, outputs)
            if binary:
                await respond(send, 200, head + binary, b"application/octet-stream",
                              [(b"inference-header-content-length", str(len(head)).encode())])
            else:
                await respond(send, 200, head, b"application/json")
        except ServeError as exc:
            status = exc.status
            await respond(send, status, dump_json({"error": str(exc)}), b"application/json")
        finally:
            server.metrics.observe(name, status, time.perf_counter() - start)
    return infer_app


def header_length(value: bytes | str | None) -> int | None:
    """The Inference-Header-Content-Length header's value, or a ServeError."""
    if value is None:
        return None
    if not value.isdigit():
        raise ServeError("Inference-Header-Content-Length must be a number", 400)
    return int(value)


async def read_body(receive, headers: dict, limit: int, timeout_s: float) -> bytes:
    """The request's body: 413 past `limit` bytes (at once when Content-Length says so), 408 when it
    does not arrive within `timeout_s`."""
    declared = headers.get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        raise ServeError(f"request body over {limit} bytes", 413)
    first = await receive()  # (most bodies arrive whole with their headers: no timer to arm)
    if first["type"] == "http.request" and not first.get("more_body", False) and len(first.get("body", b"")) <= limit:
        return first.get("body", b"")
    try:
        async with asyncio.timeout(timeout_s):
            return await _rest_of_body(first, receive, limit)
    except TimeoutError:
        raise ServeError(f"the request's body did not arrive within {timeout_s} s", 408) from None


async def _rest_of_body(message, receive, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        if message["type"] == "http.disconnect":
            raise ServeError("the client went away before sending its request", 400)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise ServeError(f"request body over {limit} bytes", 413)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


async def respond(send, status: int, body: bytes, media_type: bytes, extra: list | None = None) -> None:
    headers = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())] + (extra or [])
    if status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_S).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
