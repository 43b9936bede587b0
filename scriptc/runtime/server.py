"""`scriptc serve`: the Open Inference Protocol (KServe v2) over HTTP, with dynamic batching.

An ASGI app (starlette) under uvicorn. Each model has a bounded queue and one batching task:
requests whose inputs agree except in dim 0 are stacked (up to max_batch, waiting at most
batch_delay_ms), run once on a worker thread, and split back. Bad requests get a 4xx with a JSON
`{"error": ...}`, a full queue 503 at once, a slow request 504; SIGTERM stops accepting, drains
what is in flight, and exits 0 (uvicorn's graceful shutdown).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import ctypes
import functools
import gc
import json
import math
import re
import secrets
import signal
import struct
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import orjson
from threadpoolctl import threadpool_limits

from scriptc.errors import ArchiveError, ServeError

from ..native import jsonnum
from .model import RuntimeModel, load

DATATYPES = {"FP32": np.float32, "FP64": np.float64, "FP16": np.float16, "INT64": np.int64, "INT32": np.int32,
             "BOOL": np.bool_}
NAMES = {np.dtype(v).name: k for k, v in DATATYPES.items()}
_DATATYPE_OF = {np.dtype(v): k for k, v in DATATYPES.items()}
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
MAX_CACHED_HEADERS = 64
# A batch being formed stops waiting for company after this long without a new request (_batcher).
ARRIVAL_GAP_S = 0.0003
MAX_CACHED_HEADER_BYTES = 4096
MAX_NUMBER_ARRAYS = 64      # arrays of JSON numbers one request's header may have parsed natively
# What replaces an array of JSON numbers in the JSON that the parser sees (decode): a string no
# client can send, as it holds a secret drawn per process.
_PLACEHOLDER = f"scriptc-numbers-{secrets.token_hex(16)}-"
_NUMBER_SCAN = ctypes.PYFUNCTYPE(ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_int64)
_LITTLE_ENDIAN = sys.byteorder == "little"


@dataclass
class ServerConfig:
    max_batch: int = 32
    batch_delay_ms: float = 2.0
    max_queue: int = 256
    timeout_s: float = 30.0
    max_body_bytes: int = 64 << 20
    # Threads per model call, for scriptc's kernels and for BLAS. A server runs many requests at once
    # (batched, beside the event loop), so intra-op threads mostly contend with request handling:
    # measured here (MLP, 64 clients, 2 cores) batching gains 2.4x with 1 thread, 1.4x with 2.
    threads: int | None = 1


def _tensor_spec(text: str):
    """(datatype, shape with -1 for dynamic dims) from an IR type like Tensor(float32, [B, 784]); the
    shape is None where the type has none (a scripted graph's plain `Tensor`: any shape goes)."""
    if not text.startswith("Tensor(") or "[" not in text:
        dtype = text[7:].rstrip(")").split(",")[0].strip() if text.startswith("Tensor(") else None
        return NAMES.get(dtype, "FP32"), None
    dtype = text[7:text.index(",")].strip()
    dims = [d.strip() for d in text[text.index("[") + 1:text.rindex("]")].split(",") if d.strip()]
    return NAMES.get(dtype, "FP32"), [int(d) if d.isdigit() else -1 for d in dims]


@dataclass
class _Pending:
    inputs: list
    future: asyncio.Future
    rows: int
    key: tuple


@dataclass
class ModelEntry:
    name: str
    model: RuntimeModel
    inputs: list
    outputs: list
    batchable: bool
    queue: asyncio.Queue | None = None
    worker: asyncio.Task | None = None
    headers: dict = field(default_factory=dict)  # request headers already checked (decode)


def model_entry(name: str, model: RuntimeModel) -> ModelEntry:
    """A loaded archive with its protocol metadata: each input's and output's name, datatype and shape
    (-1 for dynamic dims), and whether requests can be stacked along dim 0."""
    sig = model.signatures.get("forward", {})
    input_types = [e["type"] for e in sig.get("inputs", [])]
    output_types = sig.get("outputs", [])
    if sig.get("specialize") is not None:
        # Scripted with example inputs: the types its specialized plan was built for say more.
        graph = model.graphs["forward"]
        input_types = [str(v.type) for v in graph.inputs[len(graph.inputs) - len(input_types):]]
        output_types = [str(v.type) for v in graph.outputs]
    inputs = [(e["name"], *_tensor_spec(t)) for e, t in zip(sig.get("inputs", []), input_types)]
    outputs = [(f"output{j}", *_tensor_spec(t)) for j, t in enumerate(output_types)]
    batchable = bool(inputs) and all(s and s[0] == -1 for _, _, s in inputs + outputs)
    _number_scan()  # decode's, compiled (or loaded from the kernel cache) now, not by the first request
    return ModelEntry(name, model, inputs, outputs, batchable)


def metadata(entry: ModelEntry) -> dict:
    """The model metadata response of the protocol (a shape the archive does not know is [-1])."""
    return {"name": entry.name, "versions": ["1"], "platform": "scriptc",
            "inputs": [{"name": n, "datatype": d, "shape": s or [-1]} for n, d, s in entry.inputs],
            "outputs": [{"name": n, "datatype": d, "shape": s or [-1]} for n, d, s in entry.outputs]}


def run_batch(entry: ModelEntry, requests: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Each request's outputs. Requests whose inputs agree except in dim 0 are stacked into one call
    and split back; a model that cannot batch runs them one by one. Raises what the model raises."""
    results: list = [None] * len(requests)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, inputs in enumerate(requests):
        key = stack_key(inputs) if entry.batchable else i
        groups[key].append(i)
    for members in groups.values():
        if len(members) == 1:
            results[members[0]] = _run(entry, requests[members[0]])
            continue
        stacked = [np.concatenate(parts) for parts in zip(*[requests[i] for i in members])]
        outputs, start = _run(entry, stacked), 0
        for i in members:
            rows = requests[i][0].shape[0]
            results[i] = [o[start:start + rows] for o in outputs]
            start += rows
    return results


def stack_key(inputs: list[np.ndarray]) -> tuple:
    """What requests must share to be stacked: each input's dtype and shape past dim 0."""
    return tuple([(a.dtype, a.shape[1:]) for a in inputs])


def _run(entry: ModelEntry, inputs: list) -> list:
    out = entry.model(*inputs)
    return list(out) if isinstance(out, tuple) else [out]


def _histogram(metric: str, model: str, bounds, counts, total_sum) -> list[str]:
    """Prometheus cumulative buckets, then _sum (when known) and _count."""
    lines, running = [], 0
    for bound, c in zip(list(bounds) + ["+Inf"], counts):
        running += c
        lines.append(f'{metric}_bucket{{model="{model}",le="{bound}"}} {running}')
    if total_sum is not None:
        lines.append(f'{metric}_sum{{model="{model}"}} {total_sum}')
    lines.append(f'{metric}_count{{model="{model}"}} {running}')
    return lines


@dataclass
class Metrics:
    requests: dict = field(default_factory=lambda: defaultdict(int))
    latency: dict = field(default_factory=lambda: defaultdict(lambda: [0] * (len(LATENCY_BUCKETS) + 1)))
    latency_sum: dict = field(default_factory=lambda: defaultdict(float))
    batches: dict = field(default_factory=lambda: defaultdict(lambda: [0] * (len(BATCH_BUCKETS) + 1)))

    def observe(self, model: str, status: int, seconds: float) -> None:
        self.requests[(model, status)] += 1
        self.latency_sum[model] += seconds
        self.latency[model][bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1

    def batch(self, model: str, size: int) -> None:
        self.batches[model][bisect.bisect_left(BATCH_BUCKETS, size)] += 1

    def render(self, queues: dict) -> str:
        lines = ["# TYPE scriptc_requests_total counter"]
        for (model, status), n in sorted(self.requests.items()):
            lines.append(f'scriptc_requests_total{{model="{model}",status="{status}"}} {n}')
        lines.append("# TYPE scriptc_request_seconds histogram")
        for model, counts in sorted(self.latency.items()):
            lines += _histogram("scriptc_request_seconds", model, LATENCY_BUCKETS, counts, self.latency_sum[model])
        lines.append("# TYPE scriptc_batch_size histogram")
        for model, counts in sorted(self.batches.items()):
            lines += _histogram("scriptc_batch_size", model, BATCH_BUCKETS, counts, None)
        lines.append("# TYPE scriptc_queue_depth gauge")
        for model, depth in sorted(queues.items()):
            lines.append(f'scriptc_queue_depth{{model="{model}"}} {depth}')
        return "\n".join(lines) + "\n"


def _parse_json(text: bytes):
    """orjson parses a request's numbers 7x faster than json (784 floats: 45 us, not 320); what it
    refuses (NaN and Infinity literals, integers past 64 bits) json reads as it always has."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


@functools.cache
def _number_scan():
    """The native scan for arrays of JSON numbers (native/jsonnum.py), compiled or loaded once."""
    return _NUMBER_SCAN(jsonnum.function())


class _ScanBuffers(threading.local):
    """Each thread's buffers for the scan, grown as bodies need and then kept, up to KEPT_VALUES: a
    new 64 KB buffer a request was fresh pages from the OS (glibc gives the heap's top back), faulted
    in by the scan. A larger body gets a buffer of its own, so one does not keep its memory."""

    KEPT_VALUES = 1 << 17   # doubles: 1 MB, for bodies up to 256 KB

    def __init__(self):
        self.spans = np.empty(4 * MAX_NUMBER_ARRAYS, np.int64)
        self.spans_address = self.spans.ctypes.data
        self.kept, self.kept_address = np.empty(0), 0

    def values_for(self, length: int) -> tuple[np.ndarray, int]:
        """Room for the numbers a text of `length` bytes can hold (each takes a digit and a comma),
        and its address."""
        needed = length // 2 + 1
        if needed > self.KEPT_VALUES:
            values = np.empty(needed)
            return values, values.ctypes.data
        if len(self.kept) < needed:
            self.kept = np.empty(min(max(needed, 2 * len(self.kept)), self.KEPT_VALUES))
            self.kept_address = self.kept.ctypes.data
        return self.kept, self.kept_address


_scan_buffers = _ScanBuffers()


class _Scanned(NamedTuple):
    """A header as _scan_numbers found it: the text with each array of JSON numbers long enough to
    matter replaced by a placeholder string, and each array's (start, end) in `text` and (first, count)
    in `values`, its numbers as doubles (what float() makes of each; valid until this thread's next scan)."""
    skeleton: bytes
    arrays: list
    values: np.ndarray
    text: bytes


def _scan_numbers(head: bytes) -> _Scanned | None:
    """The header's arrays of JSON numbers, parsed; None where the scan leaves it all to the JSON parser."""
    buffers = _scan_buffers
    values, address = buffers.values_for(len(head))
    found = _number_scan()(head, len(head), address, buffers.spans_address, MAX_NUMBER_ARRAYS)
    if found <= 0:
        return None if found < 0 else _Scanned(head, [], values, head)
    words = buffers.spans[:4 * found].tolist()
    pieces, arrays, at = [], [], 0
    for k in range(found):
        start, end, first, count = words[4 * k:4 * k + 4]
        pieces += [head[at:start], f'"{_PLACEHOLDER}{k}"'.encode()]
        arrays.append((start, end, first, count))
        at = end
    pieces.append(head[at:])
    return _Scanned(b"".join(pieces), arrays, values, head)


def decode(entry: ModelEntry, body: bytes, header_length: int | None) -> tuple[dict, list[np.ndarray]]:
    """The request (its inputs' data aside: decode reads them) and its input arrays in the model's
    order; ServeError (400) says what is wrong.

    The numbers of an input's JSON data are parsed natively (_scan_numbers), and the JSON parser reads
    the rest: 784 float32s are 16 KB of JSON, 40 of the 90 us the event loop spent on such a request
    under load. Where the scan's JSON does not check out as the request, the whole body is parsed as
    JSON, so every answer, error or not, is the JSON parser's."""
    if header_length is not None:
        if header_length < 0 or header_length > len(body):
            raise ServeError("Inference-Header-Content-Length is larger than the body", 400)
        head, binary = body[:header_length], body[header_length:]
    else:
        head, binary = body, b""
    header = _cached(entry, head)
    if header is not None and not header.arrays:  # a header seen before, with no numbers of its own
        return header.request, _input_arrays(header, binary, None)
    scanned = _scan_numbers(head) if _LITTLE_ENDIAN else None  # the scan reads eight bytes as a word
    if scanned is not None:
        header = _cached(entry, scanned.skeleton)
        if header is None:
            if not scanned.arrays:
                header = _remember(entry, head, _check_header(entry, head))
            else:
                try:
                    checked = _check_header(entry, scanned.skeleton, scanned)
                except ServeError:
                    checked = None  # said again below, of the whole body
                header = checked and _remember(entry, scanned.skeleton, checked)
        if header is not None and header.arrays == len(scanned.arrays):
            try:
                return header.request, _input_arrays(header, binary, scanned)
            except ServeError:
                pass  # a wrong count: said below as the parser says it, first of the request's errors
    header = _check_header(entry, head)
    return header.request, _input_arrays(header, binary, None)


def _cached(entry: ModelEntry, head: bytes) -> _Header | None:
    """The header checked before as this text, if it is short enough to have been kept (and to hash)."""
    return entry.headers.get(head) if len(head) <= MAX_CACHED_HEADER_BYTES else None


def _remember(entry: ModelEntry, head: bytes, header: _Header) -> _Header:
    """Cache a checked header whose inputs are all binary or natively parsed numbers: a client sends
    the same header with every request of one shape (tritonclient does), 17 -> 5 us a request here."""
    if header.cacheable and len(head) <= MAX_CACHED_HEADER_BYTES:
        if len(entry.headers) >= MAX_CACHED_HEADERS:
            entry.headers.clear()
        entry.headers[head] = header
    return header


def _input_arrays(header: _Header, binary: bytes, scanned: _Scanned | None) -> list[np.ndarray]:
    inputs = []
    for part in header.parts:
        kind = type(part)
        if kind is np.ndarray:
            inputs.append(part)
        elif kind is _Numbers:
            _, _, first, count = scanned.arrays[part.arrays[0]]
            rows = len(part.arrays)
            if rows > 1 and any(scanned.arrays[k][3] != count for k in part.arrays):
                raise ServeError(f"input '{part.name}': rows of different lengths", 400)
            if rows * count != part.count:
                raise ServeError(f"input '{part.name}': {rows * count} elements for shape {list(part.shape)} "
                                 f"({part.count})", 400)
            # consecutive arrays' numbers lie one after another in values
            inputs.append(scanned.values[first:first + rows * count].astype(part.dtype).reshape(part.shape))
        else:
            if part.offset + part.size > len(binary):
                raise ServeError(f"input '{part.name}': binary_data_size {part.size} at byte {part.offset} runs "
                                 f"past the {len(binary)} bytes of binary data", 400)
            inputs.append(np.frombuffer(binary, dtype=part.wire, count=part.count, offset=part.offset)
                          .astype(part.dtype).reshape(part.shape))
    return inputs


class _Binary(NamedTuple):
    """An input whose bytes lie in the binary tail: at offset, size bytes of count elements."""
    name: str
    wire: np.dtype      # the dtype, little-endian
    dtype: np.dtype
    shape: tuple
    offset: int
    size: int
    count: int


class _Numbers(NamedTuple):
    """A float input whose JSON data was the scan's arrays of numbers `arrays` (consecutive indices):
    one, or the rows of a nesting as numpy stacks it."""
    name: str
    dtype: np.dtype
    shape: tuple
    arrays: tuple
    count: int


def _placeholder_rows(data) -> tuple[tuple, list[int]] | None:
    """(nesting, the scan's arrays in order) of JSON data that is one placeholder or lists nesting
    placeholders evenly (every list of a level as long and as deep as its neighbours); else None."""
    if type(data) is str:
        return ((), [int(data[len(_PLACEHOLDER):])]) if data.startswith(_PLACEHOLDER) else None
    if type(data) is not list or not data:
        return None
    rows = [_placeholder_rows(item) for item in data]
    if any(r is None for r in rows) or any(r[0] != rows[0][0] for r in rows):
        return None
    return (len(data), *rows[0][0]), [k for _, arrays in rows for k in arrays]


@dataclass
class _Header:
    """A request's JSON header checked against the model: per model input, its array (JSON data the
    parser read), a _Numbers or a _Binary; and how many placeholders of the scan it had."""
    request: dict
    parts: list
    arrays: int

    @property
    def cacheable(self) -> bool:
        return not any(type(p) is np.ndarray for p in self.parts)


def _check_header(entry: ModelEntry, head: bytes, scanned: _Scanned | None = None) -> _Header | None:
    """The checked header, or a ServeError saying what is wrong with it. Given the scan that made
    head, None if its placeholders are not exactly the data of inputs (an integer input's numbers are
    then parsed from the scanned text, as the JSON parser reads them)."""
    try:
        request = _parse_json(head)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ServeError(f"malformed JSON: {exc}", 400) from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise ServeError("the request needs an 'inputs' list", 400)
    by_name = {}
    offset = 0
    placeholders = 0
    for item in request["inputs"]:
        if not isinstance(item, dict):
            raise ServeError("each input must be an object", 400)
        name, datatype, shape = item.get("name"), item.get("datatype"), item.get("shape")
        expected = next((e for e in entry.inputs if e[0] == name), None)
        if expected is None:
            raise ServeError(f"model '{entry.name}' has no input '{name}' (inputs: "
                             f"{[e[0] for e in entry.inputs]})", 400)
        if datatype not in DATATYPES:
            raise ServeError(f"input '{name}': unsupported datatype {datatype!r}", 400)
        if datatype != expected[1]:
            raise ServeError(f"input '{name}': expected datatype {expected[1]}, got {datatype}", 400)
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ServeError(f"input '{name}': shape must be a list of non-negative ints", 400)
        if expected[2] is not None and (len(shape) != len(expected[2]) or
                                        any(e != -1 and e != d for e, d in zip(expected[2], shape))):
            raise ServeError(f"input '{name}': expected shape {expected[2]}, got {shape}", 400)
        count = math.prod(shape)
        dtype = np.dtype(DATATYPES[datatype])
        size = (item.get("parameters") or {}).get("binary_data_size")
        data = item.get("data")
        if size is not None:
            if not isinstance(size, int) or size != count * dtype.itemsize:
                raise ServeError(f"input '{name}': binary_data_size {size} does not match shape {shape} "
                                 f"({count * dtype.itemsize} bytes)", 400)
            by_name[name] = _Binary(name, dtype.newbyteorder("<"), dtype, tuple(shape), offset, size, count)
            offset += size
            continue
        found = _placeholder_rows(data) if scanned is not None else None
        if found is not None:
            nesting, arrays = found
            placeholders += len(arrays)
            if dtype.kind == "f":
                by_name[name] = _Numbers(name, dtype, tuple(shape), tuple(arrays), count)
                continue
            if nesting:
                return None  # nested integers: the parser reads the whole body
            start, end, _, _ = scanned.arrays[arrays[0]]
            data = _parse_json(scanned.text[start:end])  # an integer's value is not always a double's
        if data is None:
            raise ServeError(f"input '{name}' has neither data nor binary_data_size", 400)
        try:
            array = _json_array(data, dtype)
        except (ValueError, TypeError) as exc:
            raise ServeError(f"input '{name}': data does not fit {datatype}: {exc}", 400) from None
        if array.size != count:
            raise ServeError(f"input '{name}': {array.size} elements for shape {shape} ({count})", 400)
        by_name[name] = array.reshape(shape)
    if scanned is not None and placeholders != len(scanned.arrays):
        return None
    missing = [e[0] for e in entry.inputs if e[0] not in by_name]
    if missing:
        raise ServeError(f"missing input(s) {missing}", 400)
    return _Header(request, [by_name[e[0]] for e in entry.inputs], placeholders)


# The struct code a flat list of JSON numbers packs with, for a dtype numpy would convert it to alike.
_PACK_CODES = {np.dtype(np.float16): "d", np.dtype(np.float32): "d", np.dtype(np.float64): "d",
               np.dtype(np.int64): "q"}


def _json_array(data, dtype: np.dtype) -> np.ndarray:
    """A JSON input's data as a flat array. struct packs a flat list of numbers in half numpy's time
    (784 floats: 13 us, not 27), and a double cast to the dtype is what numpy makes of each; what
    struct refuses (nested lists, strings, nulls, floats for ints, ints out of range) numpy converts
    or rejects as it always has."""
    code = _PACK_CODES.get(dtype)
    if code is not None and type(data) is list:
        try:
            packed = struct.pack(f"{len(data)}{code}", *data)
        except (struct.error, TypeError, OverflowError):
            pass
        else:
            return np.frombuffer(packed, dtype=code).astype(dtype)
    return np.asarray(data, dtype=dtype).reshape(-1)


def encode(entry: ModelEntry, request: dict, outputs: list) -> tuple[bytes, bytes]:
    """The response's JSON header and its binary tail (empty unless binary outputs were asked for)."""
    wanted = request.get("outputs")
    params = request.get("parameters") or {}
    default_binary = bool(params.get("binary_data_output", False))
    if wanted is None:
        wanted = [{"name": e[0]} for e in entry.outputs]
    if not isinstance(wanted, list):
        raise ServeError("'outputs' must be a list", 400)
    names = [e[0] for e in entry.outputs]
    results, chunks = [], []
    finite = True
    for item in wanted:
        name = item.get("name") if isinstance(item, dict) else None
        if name not in names:
            raise ServeError(f"model '{entry.name}' has no output '{name}' (outputs: {names})", 400)
        array = np.asarray(outputs[names.index(name)])
        out = {"name": name, "datatype": _DATATYPE_OF.get(array.dtype, "FP32"), "shape": list(array.shape)}
        binary = bool((item.get("parameters") or {}).get("binary_data", default_binary))
        if binary:
            # tobytes writes C order from any layout; the wire is little-endian, as nearly every host is
            native = _LITTLE_ENDIAN and array.dtype.isnative
            data = (array if native else array.astype(array.dtype.newbyteorder("<"))).tobytes()
            out["parameters"] = {"binary_data_size": len(data)}
            chunks.append(data)
        else:
            out["data"] = array.reshape(-1).tolist()
            finite = finite and (array.dtype.kind != "f" or bool(np.isfinite(array).all()))
        results.append(out)
    response = {"model_name": entry.name, "model_version": "1", "outputs": results}
    if "id" in request:
        response["id"] = request["id"]
    return _dump_json(response, finite), b"".join(chunks)


def _dump_json(value, finite: bool) -> bytes:
    """orjson's bytes (7x json's speed) unless it would change the answer: it writes NaN and infinities
    as null where json writes the NaN/Infinity literals clients read back, and refuses ints past 64 bits
    (a request id may be one)."""
    if finite:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    return json.dumps(value).encode()


def _limit_blas_threads(threads: int | None):
    """Cap the BLAS library's threads (process-wide, through threadpoolctl) while this server runs."""
    if threads is None:
        return None
    return threadpool_limits(limits=threads, user_api="blas")


class Server:
    """The models and the request logic, independent of the HTTP framework."""

    def __init__(self, paths: list, names: list | None = None, config: ServerConfig | None = None):
        self.config = config or ServerConfig()
        self._blas_limit = _limit_blas_threads(self.config.threads)
        self.models: dict[str, ModelEntry] = {}
        self.metrics = Metrics()
        names = names or []
        for i, path in enumerate(paths):
            name = names[i] if i < len(names) else Path(path).stem
            if name in self.models:
                raise ServeError(f"two models are named '{name}'; pass --name", 400)
            self.models[name] = model_entry(name, load(path, threads=self.config.threads))

    async def start(self) -> None:
        for entry in self.models.values():
            entry.queue = asyncio.Queue()
            entry.worker = asyncio.create_task(self._batcher(entry))

    async def stop(self) -> None:
        for entry in self.models.values():
            if entry.worker is not None:
                entry.worker.cancel()
        if self._blas_limit is not None:
            self._blas_limit.restore_original_limits()

    def model(self, name: str) -> ModelEntry:
        if name not in self.models:
            raise ServeError(f"unknown model '{name}'", 404)
        return self.models[name]

    def metadata(self, name: str) -> dict:
        return metadata(self.model(name))

    # --- running ---------------------------------------------------------------------------------
    async def infer(self, entry: ModelEntry, inputs: list) -> list:
        if entry.queue.qsize() >= self.config.max_queue:
            raise ServeError(f"model '{entry.name}' queue is full ({self.config.max_queue} waiting)", 503)
        loop = asyncio.get_running_loop()
        key = stack_key(inputs)
        pending = _Pending(inputs, loop.create_future(), inputs[0].shape[0] if entry.batchable and inputs[0].ndim
                           else 1, key)
        entry.queue.put_nowait(pending)
        # A timer that fails the future, not asyncio.timeout around a shield: that is a context manager,
        # a task lookup and a second future a request (30% of this function's time). A request that
        # timed out while queued is dropped by the batcher, which runs only futures not yet done.
        timer = loop.call_later(self.config.timeout_s, _time_out, pending.future, entry.name, self.config.timeout_s)
        try:
            return await pending.future
        finally:
            timer.cancel()

    async def _batcher(self, entry: ModelEntry) -> None:
        loop = asyncio.get_running_loop()
        carry = None
        while True:
            first = carry if carry is not None else await entry.queue.get()
            carry = None
            batch = [first]
            rows = first.rows
            # Wait for company only when others are already queued: a lone request runs at once, and under
            # load the requests that arrive while a batch runs form the next batch.
            # The batch waits at most batch_delay_ms, and not past a lull of ARRIVAL_GAP_S: a few clients'
            # requests arrive together, and waiting out the delay after the last of them only idled the
            # model (8 clients: 2600 req/s batched, 4200 unbatched).
            if entry.batchable and self.config.max_batch > 1 and not entry.queue.empty():
                last_arrival = loop.time()
                deadline = last_arrival + self.config.batch_delay_ms / 1000
                while rows < self.config.max_batch:
                    if not entry.queue.empty():
                        nxt = entry.queue.get_nowait()  # under load, what is queued: no timeout to arm
                        last_arrival = loop.time()
                    else:
                        remaining = min(deadline, last_arrival + ARRIVAL_GAP_S) - loop.time()
                        if remaining <= 0:
                            break
                        try:
                            async with asyncio.timeout(remaining):
                                nxt = await entry.queue.get()
                        except TimeoutError:
                            break
                        last_arrival = loop.time()
                    if nxt.key != first.key or rows + nxt.rows > self.config.max_batch:
                        carry = nxt  # a different shape or too many rows: it starts the next batch
                        break
                    batch.append(nxt)
                    rows += nxt.rows
            self.metrics.batch(entry.name, len(batch))
            live = [p for p in batch if not p.future.done()]
            if not live:
                continue
            try:
                results = await loop.run_in_executor(None, run_batch, entry, [p.inputs for p in live])
                for p, r in zip(live, results):
                    if not p.future.done():
                        p.future.set_result(r)
            except Exception as exc:  # the model failed at run time: every request in the batch gets a 500
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(ServeError(f"model '{entry.name}' failed: {type(exc).__name__}: "
                                                          f"{exc}", 500))


def _time_out(future: asyncio.Future, model: str, seconds: float) -> None:
    if not future.done():
        future.set_exception(ServeError(f"model '{model}' did not answer within {seconds} s", 504))


def create_app(server: Server):
    """The starlette application for a Server."""
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
        from scriptc import __version__
        return JSONResponse({"name": "scriptc", "version": __version__, "extensions": ["binary_tensor_data"]})

    async def model_metadata(request: Request):
        try:
            return JSONResponse(server.metadata(request.path_params["name"]))
        except ServeError as exc:
            return error(exc)

    async def model_ready(request: Request):
        try:
            server.model(request.path_params["name"])
        except ServeError as exc:
            return error(exc)
        return JSONResponse({"name": request.path_params["name"], "ready": True})

    async def metrics(request: Request):
        depths = {n: (e.queue.qsize() if e.queue is not None else 0) for n, e in server.models.items()}
        return PlainTextResponse(server.metrics.render(depths), media_type="text/plain; version=0.0.4")

    routes = [Route("/v2/health/live", live), Route("/v2/health/ready", ready), Route("/v2", root),
              Route("/v2/models/{name}", model_metadata), Route("/v2/models/{name}/versions/{version}", model_metadata),
              Route("/v2/models/{name}/ready", model_ready),
              Route("/v2/models/{name}/versions/{version}/ready", model_ready),
              Route("/metrics", metrics)]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        await server.start()
        try:
            yield
        finally:
            await server.stop()

    return _with_infer_route(server, Starlette(routes=routes, lifespan=lifespan))


_INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/[^/]+)?/infer")


def _with_infer_route(server: Server, app):
    """The ASGI app: POST .../infer handled here, in plain ASGI, everything else by `app`.

    The hot path skips starlette's router, middleware and Request/Response objects - a third of
    the event loop's time per request (0.15 of 0.47 ms, measured with the MLP at 64 clients)."""
    async def infer_app(scope, receive, send):
        match = _INFER_PATH.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if match is None:
            await app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await _respond(send, 405, b'{"error": "infer takes POST"}', b"application/json")
            return
        start = time.perf_counter()
        name = match.group(1)
        status = 200
        try:
            entry = server.model(name)
            headers = dict(scope["headers"])
            declared = headers.get(b"content-length", b"")
            if declared.isdigit() and int(declared) > server.config.max_body_bytes:
                raise ServeError(f"request body over {server.config.max_body_bytes} bytes", 413)
            body = await _read_body(receive, server.config.max_body_bytes)
            header = headers.get(b"inference-header-content-length")
            if header is not None and not header.isdigit():
                raise ServeError("Inference-Header-Content-Length must be a number", 400)
            parsed, inputs = decode(entry, body, int(header) if header is not None else None)
            outputs = await server.infer(entry, inputs)
            head, binary = encode(entry, parsed, outputs)
            if binary:
                await _respond(send, 200, head + binary, b"application/octet-stream",
                               [(b"inference-header-content-length", str(len(head)).encode())])
            else:
                await _respond(send, 200, head, b"application/json")
        except ServeError as exc:
            status = exc.status
            await _respond(send, status, json.dumps({"error": str(exc)}).encode(), b"application/json")
        finally:
            server.metrics.observe(name, status, time.perf_counter() - start)
    return infer_app


async def _read_body(receive, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ServeError("the client went away before sending its request", 400)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise ServeError(f"request body over {limit} bytes", 413)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send, status: int, body: bytes, media_type: bytes, extra: list | None = None) -> None:
    headers = [(b"content-type", media_type), (b"content-length", str(len(body)).encode())] + (extra or [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve(paths: list, host: str = "127.0.0.1", port: int = 8000, names: list | None = None,
          config: ServerConfig | None = None) -> int:
    """Load the archives and serve them until SIGTERM/SIGINT (then drain and return 0)."""
    import uvicorn

    try:
        server = Server(paths, names, config)
    except (ArchiveError, ServeError) as exc:
        raise SystemExit(f"scriptc serve: {exc}") from None
    class _Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            # uvicorn re-raises SIGTERM after its graceful shutdown, so the process would exit -15;
            # here SIGTERM/SIGINT only ask it to stop (drain in-flight requests), and serve() returns 0.
            previous = {sig: signal.signal(sig, lambda *_: setattr(self, "should_exit", True))
                        for sig in (signal.SIGTERM, signal.SIGINT)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    # The loaded models, numpy, starlette and uvicorn are a few hundred thousand objects that live as
    # long as the process; every request allocates dozens that die young. Frozen, the old ones are no
    # longer walked by each collection, and a higher first threshold collects per ~100 requests, not
    # per few: server CPU per request 0.68 -> 0.47 ms, p99 at 64 clients 82 -> 33 ms (MLP, here).
    app = create_app(server)
    gc.freeze()
    gc.set_threshold(20000, 20, 20)
    # No access log and no X-Forwarded-For rewriting: neither is used, and together they cost ~10% of
    # the event loop's time per request.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, proxy_headers=False,
                            timeout_graceful_shutdown=30)
    _Uvicorn(config).run()
    return 0
