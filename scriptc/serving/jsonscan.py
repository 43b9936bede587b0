"""The arrays of JSON numbers in a request header, parsed natively (native/jsonnum.py).

784 float32s are 16 KB of JSON, 40 of the 90 us the event loop spent on such a request under load.
The scan finds each array of numbers long enough to matter, parses it into doubles, and replaces it
in the text with a placeholder string that the JSON parser then reads in its place; protocol.decode
checks that the placeholders stand exactly where an input's data goes, and otherwise lets the JSON
parser read the whole body, so every answer, error or not, is the parser's.
"""

from __future__ import annotations

import ctypes
import functools
import secrets
import sys
import threading
from typing import NamedTuple

import numpy as np

from scriptc.native import jsonnum

MAX_NUMBER_ARRAYS = 64      # arrays of JSON numbers one request's header may have parsed natively
MAX_RANK = 64               # numpy's
# What replaces an array of JSON numbers in the JSON that the parser sees: a string no client can
# send, as it holds a secret drawn per process.
PLACEHOLDER = f"scriptc-numbers-{secrets.token_hex(16)}-"
LITTLE_ENDIAN = sys.byteorder == "little"  # (the scan reads eight bytes as a word)
_NUMBER_SCAN = ctypes.PYFUNCTYPE(ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_int64)


@functools.cache
def number_scan():
    """The native scan (native/jsonnum.py), compiled or loaded from the kernel cache once."""
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


scan_buffers = _ScanBuffers()


class Scanned(NamedTuple):
    """A header as scan_numbers found it: the text with each array of JSON numbers long enough to
    matter replaced by a placeholder string, and each array's (start, end) in `text` and (first, count)
    in `values`, its numbers as doubles (what float() makes of each; valid until this thread's next scan)."""
    skeleton: bytes
    arrays: list
    values: np.ndarray
    text: bytes


def scan_numbers(head: bytes) -> Scanned | None:
    """The header's arrays of JSON numbers, parsed; None where the scan leaves it all to the JSON parser."""
    buffers = scan_buffers
    values, address = buffers.values_for(len(head))
    found = number_scan()(head, len(head), address, buffers.spans_address, MAX_NUMBER_ARRAYS)
    if found <= 0:
        return None if found < 0 else Scanned(head, [], values, head)
    words = buffers.spans[:4 * found].tolist()
    pieces, arrays, at = [], [], 0
    for k in range(found):
        start, end, first, count = words[4 * k:4 * k + 4]
        pieces += [head[at:start], f'"{PLACEHOLDER}{k}"'.encode()]
        arrays.append((start, end, first, count))
        at = end
    pieces.append(head[at:])
    return Scanned(b"".join(pieces), arrays, values, head)


def placeholder_rows(data, depth: int = 0) -> tuple[tuple, list[int]] | None:
    """(nesting, the scan's arrays in order) of JSON data that is one placeholder or lists nesting
    placeholders evenly (every list of a level as long and as deep as its neighbours); else None, as
    for data nested deeper than any array (MAX_RANK levels), which is left to numpy to refuse."""
    if type(data) is str:
        if not data.startswith(PLACEHOLDER):
            return None
        try:
            return (), [int(data[len(PLACEHOLDER):])]
        except ValueError:
            return None
    if type(data) is not list or not data or depth >= MAX_RANK:
        return None
    rows = [placeholder_rows(item, depth + 1) for item in data]
    if any(r is None for r in rows) or any(r[0] != rows[0][0] for r in rows):
        return None
    return (len(data), *rows[0][0]), [k for _, arrays in rows for k in arrays]
