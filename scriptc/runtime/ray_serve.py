"""Serving beyond one machine: an archive as a Ray Serve deployment.

The replicas run the same runtime and speak the same Open Inference Protocol (KServe v2) as
`scriptc serve`: requests are decoded and answered by the functions the local server uses, and
Ray's `@serve.batch` stacks concurrent requests into one call. Each replica loads the archive from
`path`, so on a cluster put it where every node can read it.

    from ray import serve
    from scriptc.runtime.ray_serve import deployment
    serve.run(deployment("mlp.sc", num_replicas=2), route_prefix="/")
    # POST http://127.0.0.1:8000/v2/models/mlp/infer  (tritonclient.http works unchanged)

Needs `pip install 'ray[serve]'` (not a dependency of scriptc).
"""

from __future__ import annotations

from pathlib import Path

from scriptc.errors import ServeError


def deployment(path: str, *, name: str | None = None, num_replicas: int = 1, max_batch: int = 32,
               batch_wait_s: float = 0.002, threads: int | None = None):
    """A bound Ray Serve application serving the archive at `path` under `/v2/models/{name}` (name: the
    file's stem unless given), with `num_replicas` replicas, each batching up to `max_batch` requests
    that arrive within `batch_wait_s` of each other. Pass it to `ray.serve.run`."""
    from ray import serve
    from starlette.responses import JSONResponse, Response

    from .server import decode, encode, metadata, model_entry, run_batch

    model_name = name or Path(path).stem
    archive = str(Path(path).resolve())

    def error(exc: ServeError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    # A replica must accept max_batch requests at once, or @serve.batch never sees a full batch.
    @serve.deployment(name=f"scriptc-{model_name}", num_replicas=num_replicas, max_ongoing_requests=2 * max_batch)
    class ScriptcModel:
        def __init__(self):
            from .model import load
            self.entry = model_entry(model_name, load(archive, threads=threads))

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=batch_wait_s)
        async def _infer(self, requests: list) -> list:
            try:
                return run_batch(self.entry, requests)
            except Exception as exc:  # the model failed at run time: each request of the batch gets a 500
                failure = ServeError(f"model '{model_name}' failed: {type(exc).__name__}: {exc}", 500)
                return [failure] * len(requests)

        async def __call__(self, request):
            parts = [p for p in request.url.path.split("/") if p]
            try:
                if parts in (["v2", "health", "live"], ["v2", "health", "ready"]):
                    return JSONResponse({parts[-1]: True})
                if parts[:2] != ["v2", "models"] or len(parts) < 3 or parts[2] != model_name:
                    raise ServeError(f"unknown model or path {request.url.path!r} (this deployment serves "
                                     f"'{model_name}')", 404)
                rest = parts[3:]
                if rest[:1] == ["versions"]:
                    rest = rest[2:]
                if rest == [] and request.method == "GET":
                    return JSONResponse(metadata(self.entry))
                if rest == ["ready"] and request.method == "GET":
                    return JSONResponse({"name": model_name, "ready": True})
                if rest != ["infer"] or request.method != "POST":
                    raise ServeError(f"no route {request.method} {request.url.path}", 404)
                return await self._answer(request)
            except ServeError as exc:
                return error(exc)

        async def _answer(self, request):
            header = request.headers.get("inference-header-content-length")
            if header is not None and not header.isdigit():
                raise ServeError("Inference-Header-Content-Length must be a number", 400)
            parsed, inputs = decode(self.entry, await request.body(), int(header) if header is not None else None)
            outputs = await self._infer(inputs)
            if isinstance(outputs, ServeError):
                raise outputs
            head, binary = encode(self.entry, parsed, outputs)
            if binary:
                return Response(head + binary, media_type="application/octet-stream",
                                headers={"Inference-Header-Content-Length": str(len(head))})
            return Response(head, media_type="application/json")

    return ScriptcModel.bind()

