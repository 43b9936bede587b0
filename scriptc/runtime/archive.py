"""The `.sc` archive: one zip (stored, not compressed) with manifest.json, graphs/<method>.ir,
code/<method>.py, weights.safetensors and extra/<name>. No pickle anywhere; loading validates every
field before any large allocation and memory-maps the weights. See DESIGN.md, "Archive".
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import mmap
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scriptc.errors import ArchiveError
from scriptc.ir.graph import Graph, walk
from scriptc.ir.parser import ParseError, parse
from scriptc.ir.printer import graph_code, print_graph
from scriptc.ir.verify import VerifyError, verify

from . import attributes, limits
from .module_tree import ModuleEntry, module_tree
from .validate import check_archive

# 2 adds the optional "modules" field (the module tree: each submodule's class name, parameters and
# buffers); 3 adds a submodule's own methods to it (modules/<path>/...). Older archives still load.
FORMAT_VERSION = 3
SCRIPTC_VERSION = "0.1.0"
_DATE = (1980, 1, 1, 0, 0, 0)
_DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "I64": "int64", "I32": "int32", "I16": "int16",
           "I8": "int8", "U8": "uint8", "BOOL": "bool", "C64": "complex64"}
_CODES = {v: k for k, v in _DTYPES.items()}
MAX_RANK = 64  # numpy's
# What zipfile raises for damaged input (NotImplementedError: a byte flip can name an unknown method).
_ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, zlib.error, OSError, ValueError, EOFError, RuntimeError,
               struct.error, OverflowError)
# Array constants of the stored graphs (an optimized plan's frozen weights) are stored as tensors named
# CONSTANTS/<graphs|functions>/<name>/<k>; the node's attribute `weight` names its tensor.
CONSTANTS = "constants"
MANIFEST_KEYS = {"format_version", "scriptc_version", "kind", "methods", "attributes", "functions", "metadata",
                 "extra_files"}


@dataclass
class Archive:
    """What an archive holds once validated."""

    kind: str                                    # "module" or "function"
    graphs: dict[str, Graph]
    functions: dict[str, Graph]
    weights: dict[str, np.ndarray]
    attributes: dict[str, Any]
    signatures: dict[str, dict]
    metadata: dict[str, Any] = field(default_factory=dict)
    extra_files: dict[str, bytes] = field(default_factory=dict)
    attribute_types: dict[str, str] = field(default_factory=dict)  # the manifest's type of each typed attribute
    # The module tree (format 2): ModuleEntry per submodule, the root ("") first, in the saved module's
    # named_modules order; None for an archive that does not record it (format 1, a function).
    modules: list[ModuleEntry] | None = None
    # A submodule's own methods and the functions they call (format 3): their members' text, by the
    # submodule's path, read into graphs when first asked for (module_methods), so loading a model whose
    # submodules are never called by themselves parses none of them.
    module_texts: dict[str, dict[str, bytes]] = field(default_factory=dict)
    module_constants: dict[str, np.ndarray] = field(default_factory=dict)
    _module_methods: dict = field(default_factory=dict, repr=False)

    def module_method_names(self, path: str) -> tuple[str, ...]:
        """The names of the methods the archive stores for the submodule at `path` (none read yet)."""
        if path not in self.module_texts:
            return ()
        return next(entry.methods for entry in self.modules if entry.path == path)

    def module_signatures(self, path: str) -> dict[str, dict]:
        """The signatures (inputs' names and defaults) of the methods stored for the submodule at `path`."""
        if path not in self.module_texts:
            return {}
        return next(entry.signatures for entry in self.modules if entry.path == path)

    def module_methods(self, path: str) -> tuple[dict[str, Graph], dict[str, Graph]]:
        """The methods the archive stores for the submodule at `path` (graphs whose `self` is the
        submodule) and the functions they call, both empty where it stores none; ArchiveError where
        they do not parse, verify or fit the stored weights and attributes."""
        known = self._module_methods.get(path)
        if known is None:
            known = self._module_methods[path] = self._read_module_methods(path)
        return known

    def _read_module_methods(self, path: str) -> tuple[dict[str, Graph], dict[str, Graph]]:
        texts = self.module_texts.get(path)
        if texts is None:
            return {}, {}
        entry = next(e for e in self.modules if e.path == path)
        weights = {**self.weights, **self.module_constants}
        graphs = {name: _graph(texts[entry.member(name)], entry.member(name), weights) for name in entry.methods}
        functions = {name: _graph(texts[entry.member(name, True)], entry.member(name, True), weights)
                     for name in entry.functions}
        prefix = path + "."
        values = {k[len(prefix):]: v for k, v in self.weights.items() if k.startswith(prefix)}
        values.update({k[len(prefix):]: attributes.resolve(v, self.weights) for k, v in self.attributes.items()
                       if k.startswith(prefix)})
        check_archive("module", graphs, functions, entry.signatures, values)
        return graphs, functions


# --- safetensors ------------------------------------------------------------------------------

def encode_safetensors(tensors: dict[str, np.ndarray], metadata: dict | None = None) -> bytes:
    """The safetensors format: u64 header size, JSON header (8-byte aligned), then the raw bytes."""
    header: dict[str, Any] = {}
    chunks, offset = [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # (not ascontiguousarray: it makes a 0-d array 1-d)
        if a.dtype.name not in _CODES:
            raise ArchiveError(f"tensor '{name}' has dtype {a.dtype}, which safetensors cannot store here")
        data = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _CODES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def decode_safetensors(buffer, where: str = "weights.safetensors") -> dict[str, np.ndarray]:
    """Validate the header (dtypes, shapes, offsets inside the buffer, no overlap, total size) and
    return zero-copy arrays over `buffer`."""
    size = len(buffer)
    if size < 8:
        raise ArchiveError(f"{where}: truncated (no header length)")
    (header_len,) = struct.unpack("<Q", bytes(buffer[:8]))
    if header_len > size - 8:
        raise ArchiveError(f"{where}: header length {header_len} exceeds the file ({size} bytes)")
    if header_len > limits.MAX_SAFETENSORS_HEADER:
        raise ArchiveError(f"{where}: header of {header_len} bytes (at most {limits.MAX_SAFETENSORS_HEADER})")
    header = load_json(bytes(buffer[8:8 + header_len]), f"{where}: header")
    if not isinstance(header, dict):
        raise ArchiveError(f"{where}: header must be a JSON object")
    header.pop("__metadata__", None)
    data_start = 8 + header_len
    data_size = size - data_start
    spans = []
    out = {}
    for name, entry in header.items():
        problem = limits.name_problem(name)
        if problem is not None:
            raise ArchiveError(f"{where}: tensor name {name[:80]!r} {problem}")
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise ArchiveError(f"{where}: tensor '{name}' needs exactly dtype, shape and data_offsets")
        dtype_code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(dtype_code, str) or dtype_code not in _DTYPES:
            raise ArchiveError(f"{where}: tensor '{name}' has unknown dtype {dtype_code!r}")
        if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ArchiveError(f"{where}: tensor '{name}' has an invalid shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) and not isinstance(o, bool)
                                                                       for o in offsets)):
            raise ArchiveError(f"{where}: tensor '{name}' has invalid data_offsets {offsets!r}")
        start, end = offsets
        dtype = np.dtype(_DTYPES[dtype_code]).newbyteorder("<")
        expected = math.prod(shape) * dtype.itemsize
        if not 0 <= start <= end <= data_size:
            raise ArchiveError(f"{where}: tensor '{name}' data [{start}, {end}) lies outside the {data_size}-byte buffer")
        if end - start != expected:
            raise ArchiveError(f"{where}: tensor '{name}' of shape {shape} needs {expected} bytes, has {end - start}")
        spans.append((start, end, name))
        out[name] = (dtype, shape, start)
    spans.sort()
    for (_, e1, n1), (s2, _, n2) in zip(spans, spans[1:]):
        if s2 < e1:
            raise ArchiveError(f"{where}: tensors '{n1}' and '{n2}' overlap")
    covered = sum(e - s for s, e, _ in spans)
    if covered != data_size:
        raise ArchiveError(f"{where}: {data_size - covered} bytes of the buffer belong to no tensor")
    arrays = {}
    for name, (dtype, shape, start) in out.items():
        count = math.prod(shape)
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=data_start + start).reshape(shape)
        if not array.flags.aligned:
            array = array.copy()  # numpy's BLAS path needs aligned data; archives we write are aligned
        arrays[name] = array
    return arrays


# --- writing ----------------------------------------------------------------------------------

def _member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def _aligned_member(zf: zipfile.ZipFile, f, name: str, data: bytes, alignment: int = 64) -> None:
    """Store `data` so it starts at a multiple of `alignment` in the file (a padding extra field in
    the local header): memory-mapped weights are then aligned, which BLAS needs."""
    info = zipfile.ZipInfo(name, date_time=_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    start = f.tell() + 30 + len(name.encode()) + 4
    pad = -start % alignment
    info.extra = struct.pack("<HH", 0xCAFE, pad) + b"\0" * pad
    zf.writestr(info, data)


def write_archive(path, kind: str, graphs: dict[str, Graph], functions: dict[str, Graph],
                  weights: dict[str, np.ndarray], attributes: dict[str, Any], signatures: dict[str, dict],
                  metadata: dict | None = None, extra_files: dict[str, bytes] | None = None,
                  modules: list[ModuleEntry] | None = None, module_graphs: dict | None = None,
                  module_functions: dict | None = None, module_signatures: dict | None = None) -> None:
    """Write a deterministic archive: the same model gives the same bytes. Array constants in the
    graphs go to weights.safetensors beside the weights (CONSTANTS). `path`: a file name, or a binary
    file object (io.BytesIO...) written from its current position and left open. `modules`: the
    module tree (which weights are parameters and which buffers), for a module archive;
    `module_graphs` / `module_functions` / `module_signatures`: by a submodule's path, its own methods,
    their functions and the methods' signatures."""
    weights = dict(weights)
    module_graphs, module_functions = module_graphs or {}, module_functions or {}
    module_signatures = module_signatures or {}
    modules = None if modules is None else [dataclasses.replace(
        entry, methods=tuple(sorted(module_graphs.get(entry.path, {}))),
        functions=tuple(sorted(module_functions.get(entry.path, {}))),
        signatures=dict(sorted(module_signatures.get(entry.path, {}).items()))) for entry in modules]
    module_members, printed = {}, {}
    # (submodules of one type share their graphs - the blocks of a ResNet stage, the layers of a
    # transformer: each graph is printed, and its constants stored, once; any path's text may name them)
    for entry in modules or ():
        owned = [(entry.member(n), module_graphs[entry.path][n], n) for n in entry.methods] + \
            [(entry.member(n, True), module_functions[entry.path][n], f"functions/{n}") for n in entry.functions]
        for member, graph, local in owned:
            if id(graph) not in printed:
                printed[id(graph)] = _text_with_lifted_constants(graph, f"{CONSTANTS}/modules/{entry.path}/{local}",
                                                                 weights)
            module_members[member] = printed[id(graph)]
    texts = {name: _text_with_lifted_constants(g, f"{CONSTANTS}/graphs/{name}", weights) for name, g in graphs.items()}
    function_texts = {name: _text_with_lifted_constants(g, f"{CONSTANTS}/functions/{name}", weights)
                      for name, g in functions.items()}
    manifest = {
        "format_version": FORMAT_VERSION, "scriptc_version": SCRIPTC_VERSION, "kind": kind,
        "methods": {name: signatures.get(name, {}) for name in sorted(graphs)},
        "functions": sorted(functions), "attributes": attributes, "metadata": metadata or {},
        "extra_files": sorted(extra_files or {}),
    }
    if modules is not None:
        manifest["modules"] = [entry.to_json() for entry in modules]
    with contextlib.nullcontext(path) if hasattr(path, "write") else open(path, "wb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
            _member(zf, "manifest.json", json.dumps(manifest, sort_keys=True, indent=1).encode())
            for name in sorted(graphs):
                _member(zf, f"graphs/{name}.ir", texts[name].encode())
                _member(zf, f"code/{name}.py", graph_code(graphs[name], name).encode())
            for name in sorted(functions):
                _member(zf, f"functions/{name}.ir", function_texts[name].encode())
            for name in sorted(module_members):
                _member(zf, name, module_members[name].encode())
            # Weights last and stored, so load can memory-map them straight out of the file.
            for name in sorted(extra_files or {}):
                _member(zf, f"extra/{name}", extra_files[name])
            _aligned_member(zf, f, "weights.safetensors", encode_safetensors(weights))


def _text_with_lifted_constants(graph: Graph, prefix: str, weights: dict) -> str:
    """The graph's IR text with each array constant naming a tensor it adds to `weights` (attribute
    `weight`) instead of holding its values (the nodes get their arrays back once printed). Arrays of a
    dtype safetensors has no code for (complex128) keep their values in the text."""
    lifted = [n for n in walk(graph.block) if n.op == "prim::Constant" and isinstance(n.attrs.get("value"), np.ndarray)
              and n.attrs["value"].dtype.name in _CODES]
    values = [node.attrs["value"] for node in lifted]
    try:
        for k, node in enumerate(lifted):
            weights[f"{prefix}/{k}"] = node.attrs.pop("value")
            node.attrs["weight"] = f"{prefix}/{k}"
        return print_graph(graph)
    finally:
        for node, value in zip(lifted, values):
            node.attrs.pop("weight", None)
            node.attrs["value"] = value


def _resolve_constants(graph: Graph, weights: dict, where: str) -> None:
    """Put back the arrays of the constants _lift_constants stored (checked against their types)."""
    for node in walk(graph.block):
        if node.op != "prim::Constant" or "weight" not in node.attrs:
            continue
        name = node.attrs.pop("weight")
        value = weights.get(name) if isinstance(name, str) and name.startswith(CONSTANTS + "/") else None
        if value is None or "value" in node.attrs:
            raise ArchiveError(f"{where}: a constant names tensor {name!r}, which weights.safetensors does not hold")
        t = node.output.type
        if getattr(t, "dtype", None) is not None and t.dtype.name != value.dtype.name or \
                getattr(t, "shape", None) is not None and len(t.shape) != value.ndim or \
                any(isinstance(d, int) and d != n for d, n in zip(getattr(t, "shape", None) or (), value.shape)):
            raise ArchiveError(f"{where}: constant {name!r} is {value.dtype.name} {list(value.shape)}, "
                               f"but the graph types it {t}")
        node.attrs["value"] = value


# --- reading ----------------------------------------------------------------------------------

def load_json(data: bytes, where: str):
    """JSON text of at most limits.MAX_JSON_DEPTH levels, parsed; ArchiveError otherwise."""
    depth = limits.json_nesting(data)
    if depth > limits.MAX_JSON_DEPTH:
        raise ArchiveError(f"{where}: JSON nested {depth} levels deep (at most {limits.MAX_JSON_DEPTH})")
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveError(f"{where}: not valid JSON ({exc})") from None


def _check_name(name: str) -> None:
    if len(name.encode("utf-8", "surrogatepass")) > limits.MAX_NAME_BYTES:
        raise ArchiveError(f"member name {name[:80]!r}... is longer than {limits.MAX_NAME_BYTES} bytes")
    if name.startswith("/") or "\\" in name or any(part in ("..", "") for part in name.split("/")):
        raise ArchiveError(f"member name {name!r} is not a plain relative path")


def _graph(text: bytes, where: str, weights: dict) -> Graph:
    try:
        graph = parse(text.decode("utf-8"))
        _resolve_constants(graph, weights, where)
        verify(graph)
    except UnicodeDecodeError:
        raise ArchiveError(f"{where}: not UTF-8 text") from None
    except (ParseError, VerifyError) as exc:
        raise ArchiveError(f"{where}: {exc}") from None
    return graph


class _Members:
    """The archive's members by name, read within the caps (limits.py): how many there are, how far
    each may expand, and how many bytes all reads together may make of a file this size."""

    def __init__(self, zf: zipfile.ZipFile, file_size: int, path):
        self.zf = zf
        infos = zf.infolist()
        if len(infos) > limits.MAX_MEMBERS:
            raise ArchiveError(f"{path}: {len(infos)} members (at most {limits.MAX_MEMBERS})")
        self.infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            _check_name(info.filename)
            if info.filename in self.infos:
                raise ArchiveError(f"member {info.filename!r} appears twice")
            self.infos[info.filename] = info
        self.budget = limits.TOTAL_EXPANSION * file_size + limits.SLACK

    def __contains__(self, name: str) -> bool:
        return name in self.infos

    def size(self, name: str, limit: int) -> zipfile.ZipInfo:
        """The member's info, once its size is known to be within `limit` and the caps; counted
        against the archive's total."""
        info = self.infos[name]
        if info.file_size > limit:
            raise ArchiveError(f"{name}: {info.file_size} bytes (at most {limit})")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise ArchiveError(f"{name}: a stored member of {info.compress_size} bytes claims {info.file_size}")
        elif info.file_size > limits.EXPANSION * info.compress_size + limits.SLACK:
            raise ArchiveError(f"{name}: {info.compress_size} compressed bytes claim to expand to "
                               f"{info.file_size} (at most {limits.EXPANSION}x)")
        if info.file_size > self.budget:
            raise ArchiveError(f"{name}: the members read so far and this one expand to more than "
                               f"{limits.TOTAL_EXPANSION}x the file")
        self.budget -= info.file_size
        return info

    def read(self, name: str, limit: int) -> bytes:
        info = self.size(name, limit)
        try:
            return self.zf.read(info)  # (zipfile stops at file_size and checks the CRC)
        except _ZIP_ERRORS as exc:
            raise ArchiveError(f"{name}: unreadable ({exc})") from None


def _at_end(file) -> bool:
    """Whether a seekable file object has nothing left from where it stands."""
    try:
        here = file.tell()
        end = file.seek(0, io.SEEK_END)
        file.seek(here)
    except (OSError, AttributeError, ValueError):
        return False
    return here == end


def read_archive(path, mmap_weights: bool = True, writable: bool = False) -> Archive:
    """Open and validate an archive - a path, or a binary file object (read from where it stands; its
    weights are then read, not memory-mapped); ArchiveError says what is wrong and where. With
    `writable`, the weights may be written in place (mapped copy-on-write: a page is copied when
    first written), as a jit.load'ed module's parameters are."""
    if hasattr(path, "read"):
        if _at_end(path):  # (a buffer read once already and not rewound: torch's load fails there too)
            raise ArchiveError(f"{getattr(path, 'name', '<file object>')}: nothing to read: the file object "
                               f"stands at its end (byte {path.tell()}); seek(0) to read it again")
        file, path = contextlib.nullcontext(path), getattr(path, "name", "<file object>")
    else:
        try:
            file = open(path, "rb")
        except OSError as exc:
            raise ArchiveError(f"cannot open {path}: {exc.strerror}") from None
    with file as file:
        try:
            zf = zipfile.ZipFile(file)
            size = file.seek(0, io.SEEK_END)
        except _ZIP_ERRORS as exc:
            raise ArchiveError(f"{path}: not a scriptc archive ({exc})") from None
        members = _Members(zf, size, path)
        for required in ("manifest.json", "weights.safetensors"):
            if required not in members:
                raise ArchiveError(f"{path}: missing member {required}")
        manifest = _manifest(members.read("manifest.json", limits.MAX_MANIFEST_BYTES))

        def listed(kind: str, folder: str, names, suffix: str, limit: int) -> dict[str, bytes]:
            out = {}
            for name in names:
                member = f"{folder}/{name}{suffix}"
                if member not in members:
                    raise ArchiveError(f"manifest lists {kind} '{name}' but {member} is missing")
                out[name] = members.read(member, limit)
            return out

        try:
            weights = _weights(file, members, zf, mmap_weights, writable)
        except _ZIP_ERRORS as exc:
            raise ArchiveError(f"weights.safetensors: unreadable ({exc})") from None
        graphs = {name: _graph(text, f"graphs/{name}.ir", weights) for name, text in
                  listed("method", "graphs", manifest["methods"], ".ir", limits.MAX_IR_BYTES).items()}
        functions = {name: _graph(text, f"functions/{name}.ir", weights) for name, text in
                     listed("function", "functions", manifest["functions"], ".ir", limits.MAX_IR_BYTES).items()}
        extra = listed("extra file", "extra", manifest["extra_files"], "", limits.MAX_EXTRA_BYTES)
        modules = module_tree(manifest.get("modules"), weights, _check_name)
        module_texts = {entry.path: _module_texts(members, entry) for entry in modules or () if entry.methods}
        module_constants = {k: v for k, v in weights.items() if k.startswith(f"{CONSTANTS}/modules/")}
        weights = {name: value for name, value in weights.items() if not name.startswith(CONSTANTS + "/")}
        file.seek(0, io.SEEK_END)  # (read as a stream is: the archive is consumed)
    values = dict(weights)
    values.update({k: attributes.resolve(v, weights) for k, v in manifest["attributes"].items()})
    check_archive(manifest["kind"], graphs, functions, manifest["methods"], values)
    return Archive(manifest["kind"], graphs, functions, weights, manifest["attributes"], manifest["methods"],
                   manifest["metadata"], extra, manifest["attribute_types"], modules, module_texts, module_constants)


def _module_texts(members: "_Members", entry: ModuleEntry) -> dict[str, bytes]:
    """The members holding one submodule's stored method and function graphs, by member name."""
    out = {}
    for member in [entry.member(n) for n in entry.methods] + [entry.member(n, True) for n in entry.functions]:
        if member not in members:
            raise ArchiveError(f"manifest lists module {entry.path!r}'s methods but {member} is missing")
        out[member] = members.read(member, limits.MAX_IR_BYTES)
    return out


def _manifest(data: bytes) -> dict:
    manifest = load_json(data, "manifest.json")
    if not isinstance(manifest, dict):
        raise ArchiveError("manifest.json: must be a JSON object")
    missing = MANIFEST_KEYS - set(manifest)
    if missing:
        raise ArchiveError(f"manifest.json: missing field(s) {sorted(missing)}")
    version = manifest["format_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArchiveError(f"manifest.json: format_version must be a positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise ArchiveError(f"manifest.json: archive format {version} needs scriptc "
                           f"{manifest.get('scriptc_version', 'newer')} or later (this is {SCRIPTC_VERSION}, "
                           f"reading format <= {FORMAT_VERSION})")
    if manifest["kind"] not in ("module", "function"):
        raise ArchiveError(f"manifest.json: kind must be 'module' or 'function', got {manifest['kind']!r}")
    methods = manifest["methods"]
    # (a module may have no methods, as torch saves a scripted module without forward; a function has one)
    if not isinstance(methods, dict) or not (methods or manifest["kind"] == "module") or \
            not all(isinstance(k, str) and isinstance(v, dict) for k, v in methods.items()):
        raise ArchiveError("manifest.json: methods must be an object of method signatures (a function's: one)")
    for key in ("functions", "extra_files"):
        if not isinstance(manifest[key], list) or not all(isinstance(x, str) for x in manifest[key]):
            raise ArchiveError(f"manifest.json: {key} must be a list of names")
        for name in manifest[key]:
            _check_name(name)
    for name in methods:
        _check_name(name)
    if not isinstance(manifest["attributes"], dict) or not isinstance(manifest["metadata"], dict):
        raise ArchiveError("manifest.json: attributes and metadata must be objects")
    for k in manifest["attributes"]:
        problem = limits.name_problem(k)
        if problem is not None:
            raise ArchiveError(f"manifest.json: attribute name {k[:80]!r} {problem}")
    encoded = manifest["attributes"]
    manifest["attributes"] = {k: attributes.decode(k, v) for k, v in encoded.items()}  # (checks each entry)
    manifest["attribute_types"] = {k: v["type"] for k, v in encoded.items() if isinstance(v, dict)}
    return manifest


def _weights(file, members: _Members, zf: zipfile.ZipFile, use_mmap: bool, writable: bool) -> dict[str, np.ndarray]:
    info = members.infos["weights.safetensors"]
    if info.compress_type != zipfile.ZIP_STORED:
        data = members.read("weights.safetensors", info.file_size)
        return decode_safetensors(bytearray(data) if writable else data)
    members.size("weights.safetensors", info.file_size)
    # The member's data starts after its local header: map exactly that range of the file.
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ArchiveError("weights.safetensors: corrupt local header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    start = info.header_offset + 30 + name_len + extra_len
    file.seek(0, io.SEEK_END)
    if start + info.file_size > file.tell():
        raise ArchiveError("weights.safetensors: truncated")
    try:
        descriptor = file.fileno() if use_mmap and info.file_size else None
    except (AttributeError, io.UnsupportedOperation):  # an in-memory file object
        descriptor = None
    if descriptor is None:
        file.seek(start)
        data = file.read(info.file_size)
        return decode_safetensors(bytearray(data) if writable else data)
    mapped = mmap.mmap(descriptor, 0, access=mmap.ACCESS_COPY if writable else mmap.ACCESS_READ)
    view = memoryview(mapped)[start:start + info.file_size]
    return decode_safetensors(view)
