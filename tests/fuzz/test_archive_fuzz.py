"""Mutated archives: every one loads correctly or raises ArchiveError - nothing else, ever.

Most byte flips of a whole archive only break a CRC, so most mutants here are made inside the zip:
a member's bytes flipped, cut, spliced with tokens that matter to its parser (dtypes, brackets,
control characters, huge numbers, deep nesting), or its JSON's values swapped for others of every
JSON type, then zipped again with valid CRCs - what reaches the JSON, IR and safetensors readers and
the checks after them. A mutant that loads must run on inputs its signature takes, raising nothing
but the typed errors a model may raise. SCRIPTC_FUZZ_CASES sets the count (10,000 by default,
~30 s here); tests/fuzz/fuzz_archive.py is the coverage-guided harness for long runs.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import textwrap
import zipfile
from collections import Counter

import numpy as np
import pytest

import scriptc as torch
from scriptc.errors import ArchiveError, ScriptcError
from scriptc.runtime import load

from ..models import MLP, ScriptFeatures

CASES = int(os.environ.get("SCRIPTC_FUZZ_CASES", "10000"))
TOKENS = [b"float64", b"float16", b"int64", b"bool", b"Tensor", b"Module", b"List[", b"Optional[", b"[", b"]",
          b"{", b"}", b"(", b")", b",", b":", b'"', b"\\", b"\\u0000", b"\x00", b"\t", b"\n", b"%x", b"%0",
          b"-1", b"0", b"1e309", b"nan", b"99999999999999999999", b"prim::Call", b"prim::If", b"prim::Loop",
          b"relu", b"linear", b"matmul", b"block0():", b"-> ()", b"return", b"=", b"#", b"..", b"/", b"F32",
          b"I64", b"BOOL", b"data_offsets", b"shape", b"dtype", b"__metadata__", b"[" * 200, b"B", b"?",
          # the script frontend's types, constants and attribute entries
          b"Object(", b"Object(Tally)", b"Enum(", b"Enum(Mode, int)", b'Enum("Mode", "ADD", 1)', b"NamedTuple(",
          b"NamedTuple(Pair, lo: float)", b"lo: ", b"|", b"int|", b"|Tensor", b"Union[", b"Future[", b"Any",
          b"prim::isinstance", b"prim::GetAttr", b"prim::SetAttr", b"prim::TupleConstruct", b"prim::Refine",
          b'"object"', b'"fields"', b'"tensor"', b'"type"', b'"value"', b'{"tensor": "tally#0"}', b"Tally.step",
          b"Optional[int|" * 70]
JSON_VALUES = [None, True, False, 0, -1, 1 << 64, 1.5, float("inf"), "", "x", "float32", "../x", "a" * 300, [],
               [1, 2], [-1], [[[]]], {}, {"a": 1}, {"F32": 1}, [0, 1 << 40], "\u0000",
               # attribute entries and the values inside them
               {"type": "Any", "value": {"object": "Tally", "fields": {}}}, {"object": "Tally", "fields": []},
               {"object": 7, "fields": {"count": 1}}, {"tensor": "tally#0"}, {"tensor": "extras#1"}, {"tensor": 5},
               {"type": "Object(Tally)", "value": 1}, {"type": "Enum(Mode, int)", "value": 1},
               {"type": "NamedTuple(Pair, lo: float, hi: float)", "value": [1.0, 2.0]},
               {"type": "int|float", "value": 1}, {"type": "List[Tensor]", "value": [{"tensor": "nope"}]},
               {"type": "Dict[Tensor, int]", "value": [[{"tensor": "tally#0"}, 1]]},
               {"type": "Dict[List[int], int]", "value": [[[1], 1]]}, {"type": "List[" * 2000, "value": []},
               {"type": "Tuple[float, float]", "value": [1.0]}, {"type": "Future[int]", "value": 1}]
# Type texts an attribute entry's "type" may be swapped for.
TYPE_TEXTS = ["Any", "int", "float", "str", "bool", "None", "Tensor", "Tensor(float64, [2])", "List[int]",
              "List[Tensor]", "Dict[str, List[float]]", "Dict[int, int]", "Tuple[float, float]", "Optional[int]",
              "int|float", "Object(Tally)", "Object(Other)", "Enum(Mode, int)", "NamedTuple(Pair, lo: float, hi: float)",
              "Future[int]", "Module(fc)", "List[" * 3000 + "int" + "]" * 3000,
              "Optional[" * 990 + "int" + "]" * 990, "Tuple[" * 50, "\u0000", ""]


def _base_archives(tmp_path) -> list[bytes]:
    torch.manual_seed(0)
    traced = tmp_path / "traced.sc"
    torch.jit.trace(MLP(sizes=(4, 3, 2)).eval(), torch.randn(2, 4)).save(traced)
    scripted = tmp_path / "scripted.sc"
    torch.jit.script(_Branchy().eval()).save(scripted)
    rich = tmp_path / "rich.sc"
    torch.jit.script(ScriptFeatures().eval()).save(rich)
    return [traced.read_bytes(), scripted.read_bytes(), rich.read_bytes()]


class _Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, n: int):
        for _ in range(n):
            x = torch.relu(x) - 0.5
        if bool(x.sum() > 0.0):
            x = x * 2.0
        return self.fc(x)


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _zip(members: dict[str, bytes], rng: random.Random) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content, zipfile.ZIP_DEFLATED if rng.random() < 0.1 else zipfile.ZIP_STORED)
    return out.getvalue()


def _mutate_bytes(content: bytes, rng: random.Random) -> bytes:
    data = bytearray(content)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        at = rng.randrange(len(data) + 1)
        if choice < 0.3 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif choice < 0.5:
            del data[at:at + rng.randint(1, 64)]
        elif choice < 0.9:
            data[at:at] = rng.choice(TOKENS)
        else:
            token = rng.choice(TOKENS)
            data[at:at + len(token)] = rng.choice(TOKENS)
    return bytes(data)


def _mutate_json(value, rng: random.Random):
    """`value` with one of its values (at any depth) replaced by another JSON value."""
    if not isinstance(value, (dict, list)) or not value or rng.random() < 0.2:
        return rng.choice(JSON_VALUES)
    if isinstance(value, dict):
        key = rng.choice(list(value))
        out = dict(value)
        if rng.random() < 0.1:
            del out[key]
        else:
            out[key] = _mutate_json(value[key], rng)
        return out
    index = rng.randrange(len(value))
    return value[:index] + [_mutate_json(value[index], rng)] + value[index + 1:]


def _mutate_safetensors_header(content: bytes, rng: random.Random) -> bytes:
    length = int.from_bytes(content[:8], "little")
    header = json.loads(content[8:8 + length])
    text = json.dumps(_mutate_json(header, rng)).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + content[8 + length:]


def mutant(bases: list[bytes], rng: random.Random) -> bytes:
    data = rng.choice(bases)
    kind = rng.random()
    if kind < 0.15:  # the archive's own bytes: mostly broken CRCs and zip structure
        if rng.random() < 0.3:
            return data[:rng.randrange(len(data))]
        return _mutate_bytes(data, rng)
    members = _members(data)
    name = rng.choice(list(members))
    if kind < 0.35 and name == "manifest.json":
        manifest = json.loads(members[name])
        typed = [k for k, v in manifest["attributes"].items() if isinstance(v, dict)]
        if typed and rng.random() < 0.3:
            entry = manifest["attributes"][rng.choice(typed)]
            entry["type"] = rng.choice(TYPE_TEXTS)
        else:
            manifest = _mutate_json(manifest, rng)
        members[name] = json.dumps(manifest).encode()
    elif kind < 0.45 and name == "weights.safetensors":
        members[name] = _mutate_safetensors_header(members[name], rng)
    elif kind < 0.5:
        del members[name]
    else:
        members[name] = _mutate_bytes(members[name], rng)
    return _zip(members, rng)


def _inputs(model) -> list:
    """Inputs the loaded mutant's signature takes (zeros; an int is 2, a float 2.5; a Union's first
    option)."""
    values = []
    for p in model.signature["forward"].parameters:
        first = str(p.type).split("|")[0]
        if p.dtype is not None or p.rank is not None or first.startswith("Tensor"):
            shape = [2] * (p.rank if p.rank is not None else 2)
            for d, n in p.fixed:
                shape[d] = n
            values.append(np.zeros(shape, p.dtype or np.float32))
        else:
            values.append({"int": 2, "float": 2.5}.get(first))
    return values


def fuzz(tmp_path, cases: int) -> Counter:
    bases = _base_archives(tmp_path)
    rng = random.Random(int(os.environ.get("SCRIPTC_FUZZ_SEED", "20260")))
    outcomes: Counter = Counter()
    for case in range(cases):
        try:
            model = load(io.BytesIO(mutant(bases, rng)), jit=False)
        except ArchiveError:
            outcomes["refused"] += 1
            continue
        except Exception as exc:  # the test's point: report the mutant, and the case to rebuild it
            raise AssertionError(f"mutant {case} raised {type(exc).__name__}: {exc}") from exc
        outcomes["loaded"] += 1
        if "forward" not in model.signature:  # (a module archive may list no methods: nothing to call)
            continue
        try:
            with np.errstate(all="ignore"):
                model(*_inputs(model))
        except (ScriptcError, RuntimeError, ValueError, IndexError, TypeError):
            outcomes["loaded, refused the call"] += 1  # a mutated graph may compute something else
    return outcomes


@pytest.mark.invalid_graphs  # (a graph refused half-way through its text stays half-built)
def test_every_mutant_loads_or_raises_archive_error(tmp_path):
    outcomes = fuzz(tmp_path, CASES)
    assert sum(outcomes.values()) - outcomes["loaded, refused the call"] == CASES
    assert outcomes["refused"] > CASES // 2 and outcomes["loaded"] > CASES // 20, outcomes


def test_mutants_under_a_memory_limit(tmp_path):
    """In a process whose address space is capped: a mutant that claims huge tensors or members must
    be refused before it allocates, not end in MemoryError."""
    code = textwrap.dedent(f"""
        import pathlib, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        sys.path.insert(0, {os.getcwd()!r})
        from tests.fuzz.test_archive_fuzz import fuzz
        print(dict(fuzz(pathlib.Path({str(tmp_path)!r}), 600)))
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0 and "refused" in out.stdout, out.stderr[-2000:]


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
