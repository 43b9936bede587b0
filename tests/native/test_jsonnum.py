"""The native scan for arrays of JSON numbers (native/jsonnum.py): every number it keeps is
Python's float() of it, bit for bit, and what is not an array of JSON numbers is not one."""

from __future__ import annotations

import ctypes
import json
import math
import struct
import sys
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptc.native import jsonnum

from .guard import flush_against_a_guard_page

_SCAN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_int64)
MIN = jsonnum.MIN_NUMBERS
pytestmark = pytest.mark.skipif(sys.byteorder != "little", reason="the scan is for little-endian hosts")


def scan(text: bytes | np.ndarray, max_spans: int = 64):
    """The scan's answer: a negative code, or [(start, end, values)] per array it found."""
    fn = _SCAN(jsonnum.function())
    if isinstance(text, bytes):
        buffer = ctypes.create_string_buffer(text, len(text))
        address, length = ctypes.addressof(buffer), len(text)
    else:
        address, length = text.ctypes.data, text.size
    values = np.full(length // 2 + 1, np.nan)
    spans = np.zeros(4 * max_spans, np.int64)
    found = fn(address, length, values.ctypes.data, spans.ctypes.data, max_spans)
    if found < 0:
        return found
    return [(int(s), int(e), values[f:f + c].copy()) for s, e, f, c in spans[:4 * found].reshape(-1, 4)]


def bits(values) -> list[bytes]:
    return [struct.pack("<d", v) for v in values]


def python_value(literal: str) -> float:
    """What the server made of a JSON number before the scan: orjson's int or float, as a double."""
    return float(int(literal)) if literal.lstrip("-").isdigit() else float(literal)


def hard(literal: str) -> bool:
    """Numbers the scan may leave to the JSON parser (INEXACT): more than 19 significant digits,
    subnormal or zero by underflow, or past the largest double."""
    digits = Decimal(literal).as_tuple().digits
    value = python_value(literal)
    return len(digits) > 19 or math.isinf(value) or (0 < abs(Decimal(literal)) and abs(value) < sys.float_info.min)


def check_numbers(literals: list[str]) -> None:
    padded = literals + ["0"] * (MIN - len(literals))
    text = ("[" + ", ".join(padded) + "]").encode()
    got = scan(text)
    if got == jsonnum.INEXACT:
        assert any(hard(s) for s in padded), padded
        return
    [(start, end, values)] = got
    assert (start, end) == (0, len(text))
    assert bits(values) == bits([python_value(s) for s in padded])


_finite = st.floats(allow_nan=False, allow_infinity=False)
_literals = st.one_of(
    _finite.map(repr),
    _finite.map(lambda v: repr(float(np.float32(v))) if abs(v) < 3e38 else repr(v)),
    st.tuples(_finite, st.integers(0, 25)).map(lambda t: f"{t[0]:.{t[1]}e}"),
    st.tuples(st.floats(-1e6, 1e6), st.integers(0, 25)).map(lambda t: f"{t[0]:.{t[1]}f}"),
    st.integers(-2 ** 80, 2 ** 80).map(str),
    st.tuples(st.integers(0, 10 ** 19), st.integers(-340, 320)).map(lambda t: f"{t[0]}e{t[1]}"),
    st.sampled_from(["0", "-0", "0.0", "-0.0", "0e5", "-0E-5", "1E2", "1e+2", "9007199254740993", "5e-324",
                     "2.2250738585072011e-308", "1.7976931348623157e308", "1.7976931348623159e308",
                     "123456789012345678901234567890", "0.1", "0.30000000000000004"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_literals, min_size=1, max_size=40))
def test_each_number_is_pythons_float_of_it(literals):
    check_numbers(literals)


def test_ties_between_doubles_round_to_even_or_are_left_to_the_parser():
    """The decimal halfway between two doubles, and the decimals just either side of it."""
    rng = np.random.default_rng(0)
    for word in rng.integers(1, 0x7FEFFFFFFFFFFFFF, size=300, dtype=np.int64):
        low = struct.unpack("<d", struct.pack("<q", int(word)))[0]
        high = math.nextafter(low, math.inf)
        middle = (Decimal(low) + Decimal(high)) / 2
        check_numbers([format(middle, "e"), format(middle.next_plus(), "e"), format(middle.next_minus(), "e")])
    check_numbers(["9007199254740993", "9007199254740995", "4.5035996273704965e15", "0.5", "2.5", "1e23"])


@pytest.mark.parametrize("zeros", [0, 1, 9])
def test_digit_runs_of_every_length(zeros):
    """Integer and fraction parts of 1 to 30 digits, read eight at a time and then one at a time,
    after leading zeros of the fraction, with the text ending right after the number or not."""
    rng = np.random.default_rng(zeros)
    literals = []
    for length in range(1, 31):
        digits = "".join(str(d) for d in rng.integers(0, 10, length))
        literals += [str(int("1" + digits)), "0." + "0" * zeros + digits, digits[:1].replace("0", "7") + "." + digits,
                     "-" + str(int("9" + digits)) + "." + digits + "e-7"]
    for at in range(0, len(literals), MIN):
        check_numbers(literals[at:at + MIN])
    for literal in literals:
        check_numbers(["0"] * MIN + [literal])


def test_float32_values_as_clients_send_them():
    """float32 arrays through tolist() and json.dumps (tritonclient's JSON): every one kept, none left."""
    x = np.random.default_rng(1).standard_normal(20000).astype(np.float32)
    text = json.dumps(x.tolist()).encode()
    [(_, _, values)] = scan(text)
    assert values.astype(np.float32).tobytes() == x.tobytes()


@pytest.mark.parametrize("text, arrays", [
    # arrays inside strings are text; escaped quotes do not end a string
    (b'{"a": "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]", "b": LIST}', 1),
    (b'{"a": "x\\"[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]\\"", "b": LIST}', 1),
    (b'{"a\\\\": LIST}', 1),
    # nested rows are arrays each; the outer one is not
    (b'[LIST, LIST]', 2),
    (b'[[LIST]]', 1),
    # shorter arrays are left to the JSON parser
    (b'{"shape": [1, 16], "data": LIST}', 1),
    (b'[1, 2, 3]', 0),
    (b'[]', 0),
])
def test_what_is_an_array_of_numbers(text, arrays):
    numbers = ", ".join(str(i) for i in range(1, MIN + 1)).encode()
    text = text.replace(b"LIST", b"[" + numbers + b"]")
    got = scan(text)
    assert len(got) == arrays
    for start, end, values in got:
        assert json.loads(text[start:end]) == list(values)


@pytest.mark.parametrize("element", ["01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "1E-", "NaN", "Infinity",
                                     "-Infinity", "0x10", "1.5.5", "1e5.5", "--1", "1-", "true", "null", '"1"',
                                     "{}", "1 2", ",", ""])
def test_an_array_with_anything_but_json_numbers_is_not_one(element):
    numbers = ["1"] * MIN
    numbers[MIN // 2] = element
    text = ("[" + ",".join(numbers) + "]").encode()
    assert scan(text) == []


def test_whitespace_and_the_text_ending_anywhere():
    text = ("[\t" + " ,\n".join(str(i) for i in range(MIN)) + "\r\n]").encode()
    [(start, end, values)] = scan(text)
    assert (start, end) == (0, len(text)) and list(values) == list(range(MIN))
    for cut in range(len(text)):
        assert scan(text[:cut]) == []
    assert scan(b'"unterminated [' + text) == []


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes")
def test_it_reads_nothing_past_the_text():
    text = b"[" + b",".join(b"1.25" for _ in range(MIN)) + b"]"
    for cut in (len(text), len(text) - 1, len(text) - 3):
        flush, unprotect = flush_against_a_guard_page(np.frombuffer(text[:cut], np.uint8))
        try:
            got = scan(flush)
        finally:
            unprotect()
        assert len(got) == (cut == len(text))


def test_an_integer_minus_zero_is_zero_and_a_float_one_is_negative():
    [(_, _, values)] = scan(("[" + ",".join(["-0", "-0.0", "-0e3"] + ["0"] * MIN) + "]").encode())
    assert bits(values[:3]) == bits([0.0, -0.0, -0.0])


def test_too_many_arrays_and_numbers_it_cannot_round():
    row = "[" + ",".join(["1"] * MIN) + "]"
    assert len(scan(("[" + ",".join([row] * 3) + "]").encode(), max_spans=3)) == 3
    assert scan(("[" + ",".join([row] * 4) + "]").encode(), max_spans=3) == jsonnum.TOO_MANY
    for literal in ("1e-320", "1e400", "-1e400", "1e-400"):
        assert scan(("[" + ",".join([literal] + ["1"] * MIN) + "]").encode()) == jsonnum.INEXACT


def test_the_power_table_is_fast_floats():
    """First and a middle entry as fast_float lists them (5**-342 and 5**-1, 5**0)."""
    table = jsonnum.powers_of_five()
    assert table[0] == 0xEEF453D6923BD65A_113FAA2906A13B3F
    assert table[-1 - jsonnum.MIN_EXP10] == 0xCCCCCCCCCCCCCCCC_CCCCCCCCCCCCCCCD
    assert table[-jsonnum.MIN_EXP10] == 1 << 127
