"""Serving beyond one machine: an archive as a Ray Serve deployment.

The replicas run the same runtime and speak the same Open Inference Protocol (KServe v2) as
`scriptc serve`: requests are decoded, checked and answered by the functions the local server uses,
and Ray's `@serve.batch` stacks concurrent requests into one call. Each replica loads the archive
from `path`, so on a cluster put it where every node can read it.

    from ray import serve
    from scriptc.serving.ray_serve import deployment
    serve.run(deployment("mlp.sc", num_replicas=2), route_prefix="/mlp")
    # POST http://127.0.0.1:8000/mlp/v2/models/mlp/infer  (tritonclient.http: url "127.0.0.1:8000/mlp")

Needs `pip install 'scriptc[serve,ray]'`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from scriptc.errors import ServeError


def deployment(path: str, *, name: str | None = None, num_replicas: int | str | None = 1, max_batch: int = 32,
               batch_wait_s: float = 0.002, ray_actor_options: dict | None = None,
               autoscaling_config: dict | None = None, max_ongoing_requests: int | None = None,
               max_queued_requests: int = -1, timeout_s: float = 30.0, max_body_bytes: int = 64 << 20):
    """A bound Ray Serve application serving the archive at `path` under `/v2/models/{name}` (name:
    the file's stem unless given), below whatever route_prefix `serve.run` gives it.

    Each replica batches up to `max_batch` requests that arrive within `batch_wait_s` of each other,
    and runs its model with as many threads as the CPUs it reserved (`ray_actor_options["num_cpus"]`,
    Ray Serve's default 1). `num_replicas` or `autoscaling_config`, `ray_actor_options`,
    `max_ongoing_requests` (default 2 * max_batch: a replica must take a whole batch at once) and
    `max_queued_requests` (-1: no limit; past it Ray answers 503) are Ray Serve's deployment options.
    A request whose body exceeds `max_body_bytes` gets 413; one not answered within `timeout_s`, 504.
    Pass the result to `ray.serve.run`."""
    from ray import serve
    from starlette.responses import JSONResponse, PlainTextResponse, Response

    from .app import header_length, read_body, server_metadata
    from .batcher import run_batch
    from .metrics import CONTENT_TYPE, Metrics
    from .protocol import MODEL_VERSION, decode, encode, metadata, model_entry

    model_name = name or Path(path).stem
    archive = str(Path(path).resolve())
    options = {"ray_actor_options": ray_actor_options} if ray_actor_options is not None else {}
    if autoscaling_config is not None:
        options["autoscaling_config"] = autoscaling_config
    else:
        options["num_replicas"] = num_replicas

    def error(exc: ServeError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status,
                            headers={"Retry-After": "1"} if exc.status == 503 else None)

    @serve.deployment(name=f"scriptc-{model_name}", max_ongoing_requests=max_ongoing_requests or 2 * max_batch,
                      max_queued_requests=max_queued_requests, **options)
    class ScriptcModel:
        def __init__(self):
            import ray
            from threadpoolctl import threadpool_limits

            from scriptc.runtime.model import load

            # The CPUs Ray gave this replica, not the node's cores: replicas side by side each get theirs.
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
            self.threads = max(1, int(cpus))
            self._blas_limit = threadpool_limits(limits=self.threads, user_api="blas")
            self.entry = model_entry(model_name, load(archive, threads=self.threads))
            self.metrics = Metrics()

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=batch_wait_s)
        async def _infer(self, requests: list) -> list:
            self.metrics.batch(model_name, len(requests))
            try:
                return await asyncio.get_running_loop().run_in_executor(None, run_batch, self.entry, requests)
            except Exception as exc:  # the model failed at run time: each request of the batch gets a 500
                failure = ServeError(f"model '{model_name}' failed: {type(exc).__name__}: {exc}", 500)
                return [failure] * len(requests)

        async def __call__(self, request):
            # Below a route prefix, the path the proxy hands on starts with it (the scope's root_path).
            root = request.scope.get("root_path", "")
            path = request.url.path[len(root):] if root and request.url.path.startswith(root) else request.url.path
            parts = [p for p in path.split("/") if p]
            try:
                if request.method == "GET":
                    if parts in (["v2", "health", "live"], ["v2", "health", "ready"]):
                        return JSONResponse({parts[-1]: True})
                    if parts == ["v2"]:
                        return JSONResponse(server_metadata())
                    if parts == ["metrics"]:  # (this replica's)
                        threads = f'# TYPE scriptc_threads gauge\nscriptc_threads{{model="{model_name}"}} {self.threads}\n'
                        return PlainTextResponse(self.metrics.render({}) + threads, media_type=CONTENT_TYPE)
                if parts[:2] != ["v2", "models"] or len(parts) < 3 or parts[2] != model_name:
                    raise ServeError(f"unknown model or path {path!r} (this deployment serves '{model_name}')", 404)
                rest = parts[3:]
                if rest[:1] == ["versions"]:
                    if rest[1:2] != [MODEL_VERSION]:
                        raise ServeError(f"model '{model_name}' has no version {'/'.join(rest[1:2])!r} (versions: "
                                         f"['{MODEL_VERSION}'])", 404)
                    rest = rest[2:]
                if rest == [] and request.method == "GET":
                    return JSONResponse(metadata(self.entry))
                if rest == ["ready"] and request.method == "GET":
                    return JSONResponse({"name": model_name, "ready": True})
                if rest != ["infer"] or request.method != "POST":
                    raise ServeError(f"no route {request.method} {path}", 404)
                return await self._answer(request)
            except ServeError as exc:
                return error(exc)

        async def _answer(self, request):
            started, status = asyncio.get_running_loop().time(), 200
            try:
                headers = {k.encode("latin-1"): v.encode("latin-1") for k, v in request.headers.items()}
                body = await read_body(request.receive, headers, max_body_bytes, timeout_s)
                parsed, inputs = decode(self.entry, body, header_length(headers.get(b"inference-header-content-length")))
                try:
                    outputs = await asyncio.wait_for(self._infer(inputs), timeout_s)
                except TimeoutError:
                    raise ServeError(f"model '{model_name}' did not answer within {timeout_s} s", 504) from None
                if isinstance(outputs, ServeError):
                    raise outputs
                head, binary = encode(self.entry, parsed, outputs)
            except ServeError as exc:
                status = exc.status
                raise
            finally:
                self.metrics.observe(model_name, status, asyncio.get_running_loop().time() - started)
            if binary:
                return Response(head + binary, media_type="application/octet-stream",
                                headers={"Inference-Header-Content-Length": str(len(head))})
            return Response(head, media_type="application/json")

    return ScriptcModel.bind()
