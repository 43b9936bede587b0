"""The most an archive may hold, and the nesting of JSON text measured without parsing it.

Loading checks an archive against these before it allocates or recurses (DESIGN.md, "Archive":
it never allocates more than the file implies). Each cap is far above what a saved model needs.
"""

from __future__ import annotations

import re

import numpy as np

MAX_MEMBERS = 4096                 # zip members (an archive holds ~3 per method, plus extra files)
MAX_NAME_BYTES = 1024              # a member's, method's, tensor's or attribute's name
MAX_NAME_PARTS = 64                # dotted parts of a tensor or attribute name (a module path)
MAX_JSON_DEPTH = 64                # nesting of manifest.json and of the safetensors header
MAX_MANIFEST_BYTES = 16 << 20
MAX_SAFETENSORS_HEADER = 16 << 20
MAX_IR_BYTES = 16 << 20            # each graph's text: ~3x a 100,000-node chain
MAX_EXTRA_BYTES = 256 << 20        # each extra file
MAX_INLINED_NODES = 1_000_000      # a method with every prim::Call inlined
# Decompressed bytes: a compressed member may expand to EXPANSION times its compressed size (plus
# SLACK), and all members read together to TOTAL_EXPANSION times the file (plus SLACK). Deflate
# reaches ~1000x on a bomb; text compresses ~5-10x, weights barely.
EXPANSION = 64
TOTAL_EXPANSION = 16
SLACK = 16 << 20

# A string, or an unterminated one up to the end: every quote starts a match that succeeds without
# backtracking, so the scan stays linear whatever the text.
_STRING = re.compile(rb'"(?:[^"\\]|\\.|\\\Z)*+(?:"|\Z)', re.DOTALL)
_STEPS = np.zeros(256, np.int8)
_STEPS[[ord("["), ord("{")]] = 1
_STEPS[[ord("]"), ord("}")]] = -1
_CHUNK = 1 << 20


def json_nesting(text: bytes) -> int:
    """How deeply the arrays and objects of JSON `text` nest (what strings hold aside), in numpy's
    time: json.loads recurses once per level, so it is asked only for text this says is shallow."""
    codes = np.frombuffer(_STRING.sub(b'""', text), np.uint8)
    depth = deepest = 0
    for start in range(0, len(codes), _CHUNK):
        running = np.cumsum(_STEPS[codes[start:start + _CHUNK]], dtype=np.int64) + depth
        deepest = max(deepest, int(running.max()))
        depth = int(running[-1])
    return deepest


def name_problem(name: str) -> str | None:
    """What is wrong with a tensor or attribute name (too long, too many dotted parts, an empty
    part), or None."""
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    parts = name.split(".")
    if len(parts) > MAX_NAME_PARTS:
        return f"has more than {MAX_NAME_PARTS} dotted parts"
    if "" in parts:
        return "has an empty dotted part"
    return None
