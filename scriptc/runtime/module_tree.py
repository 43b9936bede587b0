"""The module tree an archive records (format 2 and later): each submodule's class name, which stored
tensors are its parameters and which its buffers, and (format 3) the methods of its own it stores,
so that a loaded module's submodule can be called by itself as torch's can (`loaded.layer1(x)`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scriptc.errors import ArchiveError

from . import limits

_REQUIRED = {"path", "original_name", "parameters", "buffers"}
_OPTIONAL = {"methods", "functions", "signatures"}


@dataclass(frozen=True)
class ModuleEntry:
    """One module of the saved tree: its path ("" for the root, "encoder.fc"), its class name (torch's
    original_name), the local names of its parameters and of its buffers, in their order, and for a
    submodule the names of its stored methods (graphs of their own, `self` the submodule), of the
    functions those call, and the methods' signatures (their inputs' names and defaults), by name."""

    path: str
    original_name: str
    parameters: tuple[str, ...]
    buffers: tuple[str, ...]
    methods: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    signatures: dict[str, dict] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"path": self.path, "original_name": self.original_name, "parameters": list(self.parameters),
               "buffers": list(self.buffers)}
        if self.methods:
            out["methods"], out["functions"] = list(self.methods), list(self.functions)
        if self.signatures:
            out["signatures"] = self.signatures
        return out

    def member(self, name: str, function: bool = False) -> str:
        """The archive member holding one of this submodule's method (or function) graphs."""
        return f"modules/{self.path}/{'functions/' if function else ''}{name}.ir"


def module_tree(entries, weights: dict, check_name) -> list[ModuleEntry] | None:
    """The manifest's "modules" field as ModuleEntry's, checked: a list of entries with a path (the root
    "" first, each other one's parent listed before it), a class name, lists of parameter and buffer
    names that are tensors of weights.safetensors, none listed twice, and a submodule's lists of
    method and function names (`check_name` checks each as an archive member name) and its methods'
    signatures (checked against their graphs when those are read)."""
    if entries is None:
        return None
    where = "manifest.json: modules"
    if not isinstance(entries, list) or not entries:
        raise ArchiveError(f"{where}: must be a non-empty list of module entries")
    tree: list[ModuleEntry] = []
    paths: set[str] = set()
    listed: set[str] = set()
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        if not isinstance(entry, dict) or not _REQUIRED <= set(entry) <= _REQUIRED | _OPTIONAL:
            raise ArchiveError(f"{at}: needs exactly path, original_name, parameters and buffers (and, for a "
                               "submodule, methods and functions)")
        path, name = entry["path"], entry["original_name"]
        if not isinstance(path, str) or not isinstance(name, str) or not name or len(name) > limits.MAX_NAME_BYTES:
            raise ArchiveError(f"{at}: path must be a string and original_name a class name, got {path!r}, {name!r}")
        if (index == 0) != (path == ""):
            raise ArchiveError(f"{at}: the root module (path \"\") must come first, and only once")
        if path:
            problem = limits.name_problem(path)
            if problem is not None:
                raise ArchiveError(f"{at}: path {path[:80]!r} {problem}")
            if path in paths or path.rpartition(".")[0] not in paths:
                raise ArchiveError(f"{at}: module {path!r} is listed twice or before its parent")
        paths.add(path)
        for kind in ("parameters", "buffers"):
            names = entry[kind]
            if not isinstance(names, list) or not all(isinstance(n, str) and n and "." not in n for n in names):
                raise ArchiveError(f"{at}: {kind} must be a list of attribute names (no dots)")
            for local in names:
                full = f"{path}.{local}" if path else local
                if full not in weights or full in listed:
                    raise ArchiveError(f"{at}: {kind[:-1]} {full!r} is not a tensor of weights.safetensors, "
                                       "or is listed twice")
                listed.add(full)
        stored = _stored_names(entry, at, check_name)
        if stored[0] and not path:
            raise ArchiveError(f"{at}: the root module's methods are the archive's graphs, not listed here")
        signatures = entry.get("signatures", {})
        if not isinstance(signatures, dict) or not set(signatures) <= set(stored[0]) or \
                not all(isinstance(s, dict) for s in signatures.values()):
            raise ArchiveError(f"{at}: signatures must map some of its methods to their signatures")
        tree.append(ModuleEntry(path, name, tuple(entry["parameters"]), tuple(entry["buffers"]), *stored, signatures))
    return tree


def _stored_names(entry: dict, at: str, check_name) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if ("methods" in entry) != ("functions" in entry):
        raise ArchiveError(f"{at}: methods and functions come together")
    out = []
    for kind in ("methods", "functions"):
        names = entry.get(kind, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names) or \
                len(set(names)) != len(names):
            raise ArchiveError(f"{at}: {kind} must be a list of distinct names")
        for name in names:
            check_name(name)
        out.append(tuple(names))
    return out[0], out[1]
