"""Arrays of JSON numbers parsed natively, for the server's JSON tensors.

A request with a 784-float input is 16 KB of JSON. orjson makes 784 Python floats of it and
struct packs them into an array: ~40 us of the ~90 us the server's event loop spent on such a
request under load. This scan finds each flat array of JSON numbers that lies outside strings and
writes its numbers as doubles, so the server parses only the rest of the JSON (see
serving/protocol.py's decode): 7 us for those 16 KB here, digits read eight at a time.

scriptc_json_numbers(text, length, values, spans, max_spans) -> i64
    text[0:length] is the JSON; values has room for length // 2 + 1 doubles; spans for 4 * max_spans
    words. For each array of at least MIN_NUMBERS numbers, in order of the text, spans[4k:4k + 4] =
    (start, end, first, count): text[start:end] is the array with its brackets and
    values[first:first + count] its numbers. Returns how many arrays there are; TOO_MANY when
    there are more than max_spans; INEXACT when a number in an array is one this scan does not round
    (out of double range, a subnormal, or one with more than 19 significant digits where the 19 do not
    decide it): then the caller parses the text some other way. An array holding anything but JSON numbers (RFC 8259's grammar: no
    leading zeros, NaN or hex) is not one; what lies inside it is scanned on as the rest of the text.

It reads eight bytes of digits as one little-endian word, so it is for little-endian hosts.

Each number is the double nearest its decimal value, ties to even: what Python's float() makes of
it. An integer's "-0" is 0.0, as orjson reads it (an int) and the server casts it. Where the
digits and the power of ten are both exact doubles, one multiply or divide rounds (Clinger's fast
path); else the rounding is Eisel and Lemire's as fast_float does it (Lemire, "Number Parsing at a
Gigabyte per Second", 2021): the first 19 significant digits times a 128-bit power of five, the
product's top bits the double's. Past 19 digits the number is rounded from the digits kept and from
them plus one unit, and both must agree.
"""

from __future__ import annotations

from llvmlite import ir

NAME = "scriptc_json_numbers"
MIN_NUMBERS = 16            # shorter arrays (a shape, a small input) are left to the JSON parser
TOO_MANY, INEXACT = -1, -2
MIN_EXP10, MAX_EXP10 = -342, 308   # past these a double is 0 or infinite
_KEPT_DIGITS = 19                  # the significant digits that fit a uint64
_BIAS = 1023
_EXACT_POWERS = 22                 # 1e0..1e22 are exact doubles

I1, I8, I64, I128 = ir.IntType(1), ir.IntType(8), ir.IntType(64), ir.IntType(128)
DOUBLE = ir.DoubleType()
_NOT_NUMBER, _NUMBER = 0, 1        # a number's outcome besides INEXACT


def powers_of_five() -> list[int]:
    """fast_float's table: 5**q's 128-bit mantissa, its top bit set, for q from MIN_EXP10 to
    MAX_EXP10 (10**q has the same mantissa). Truncated for q >= 0; for q < 0 one more than the
    truncated reciprocal, with which the 128-bit product always decides the rounding (Mushtak and
    Lemire, "Fast Number Parsing Without Fallback", 2023)."""
    mantissas = []
    for q in range(MIN_EXP10, MAX_EXP10 + 1):
        power = 5 ** abs(q)
        bits = power.bit_length()
        if q >= 0:
            mantissas.append(power >> (bits - 128) if bits > 128 else power << (128 - bits))
        elif q >= -27:
            mantissas.append((1 << (bits + 127)) // power + 1)
        else:
            mantissa = (1 << (2 * bits + 128)) // power + 1
            mantissas.append(mantissa >> (mantissa.bit_length() - 128))
    return mantissas


def function() -> int:
    """The address of the scan, compiled once per machine."""
    from .build import compiled

    return compiled("jsonnum", ("native/jsonnum",), module, [NAME])[NAME]


def module(triple: str) -> ir.Module:
    m = ir.Module(name=NAME)
    m.triple = triple
    fn = ir.Function(m, ir.FunctionType(I64, [I8.as_pointer(), I64, DOUBLE.as_pointer(), I64.as_pointer(), I64]),
                     name=NAME)
    _Scan(m, fn).build()
    return m


def _const(value: int, type_=I64):
    return ir.Constant(type_, value)


class _Scan:
    """The scan's function: mutable variables as allocas (LLVM promotes them to registers), one
    basic block per state of the scan."""

    def __init__(self, m: ir.Module, fn: ir.Function):
        self.m, self.fn = m, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.text, self.length, self.values, self.spans, self.max_spans = fn.args
        mantissas = powers_of_five()
        self.high = self._table("scriptc_pow5_high", I64, [v >> 64 for v in mantissas])
        self.low = self._table("scriptc_pow5_low", I64, [v & (2 ** 64 - 1) for v in mantissas])
        self.exact_powers = self._table("scriptc_exact_powers", DOUBLE,
                                        [float(10 ** q) for q in range(_EXACT_POWERS + 1)])
        self.ctlz = ir.Function(m, ir.FunctionType(I64, [I64, I1]), "llvm.ctlz.i64")

    def _table(self, name: str, element: ir.Type, values: list):
        array = ir.ArrayType(element, len(values))
        table = ir.GlobalVariable(self.m, array, name)
        table.initializer = ir.Constant(array, values)
        table.global_constant = True
        table.linkage = "internal"
        return table

    def var(self, name: str, initial, type_=I64):
        slot = self.b.alloca(type_, name=name)
        self.b.store(initial if isinstance(initial, ir.Value) else _const(initial, type_), slot)
        return slot

    def block(self, name: str):
        return self.fn.append_basic_block(name)

    def char(self, at):
        """text[at] as an i64, or -1 at and past the end."""
        b = self.b
        inside = b.icmp_signed("<", at, self.length)
        with b.if_else(inside) as (then, otherwise):
            with then:
                loaded = b.zext(b.load(b.gep(self.text, [at])), I64)
                then_block = b.block
            with otherwise:
                otherwise_block = b.block
        result = b.phi(I64)
        result.add_incoming(loaded, then_block)
        result.add_incoming(_const(-1), otherwise_block)
        return result

    def is_digit(self, c):
        return self.b.icmp_unsigned("<", self.b.sub(c, _const(ord("0"))), _const(10))

    def is_any(self, c, chars: str):
        b = self.b
        result = ir.Constant(I1, 0)
        for ch in chars:
            result = b.or_(result, b.icmp_signed("==", c, _const(ord(ch))))
        return result

    def skip_space(self, at_slot) -> None:
        """Advance *at_slot past JSON whitespace."""
        b = self.b
        test, step, done = self.block("space"), self.block("space.step"), self.block("space.done")
        b.branch(test)
        b.position_at_end(test)
        at = b.load(at_slot)
        b.cbranch(self.is_any(self.char(at), " \t\n\r"), step, done)
        b.position_at_end(step)
        b.store(b.add(at, _const(1)), at_slot)
        b.branch(test)
        b.position_at_end(done)

    def build(self) -> None:
        b = self.b
        pos = self.var("pos", 0)
        filled = self.var("filled", 0)       # values kept so far
        found = self.var("found", 0)         # arrays recorded so far
        at = self.var("at", 0)               # the cursor inside an array
        count = self.var("count", 0)         # numbers in the array being read
        start = self.var("start", 0)
        self.number_slots = [self.var(n, 0) for n in ("mantissa", "kept", "significant", "truncated", "point",
                                                      "exponent", "negative", "integer")]
        # What turns out not to be an array of numbers goes back to `scan` just past its '[' (pos is
        # still there), and what lies inside it is scanned as any other text.
        scan, string, array, element, separator, closed = (
            self.block(n) for n in ("scan", "string", "array", "element", "separator", "closed"))
        b.branch(scan)

        # Outside arrays of numbers: skip to the next string or '['.
        b.position_at_end(scan)
        here = b.load(pos)
        c = self.char(here)
        with b.if_then(b.icmp_signed("<", c, _const(0))):
            b.ret(b.load(found))
        b.store(b.add(here, _const(1)), pos)
        switch = b.switch(c, scan)
        switch.add_case(_const(ord('"')), string)
        switch.add_case(_const(ord("[")), array)

        # A string: to its closing quote, a backslash escaping the next byte.
        b.position_at_end(string)
        here = b.load(pos)
        c = self.char(here)
        with b.if_then(b.icmp_signed("<", c, _const(0))):
            b.ret(b.load(found))
        b.store(b.add(here, b.select(b.icmp_signed("==", c, _const(ord("\\"))), _const(2), _const(1))), pos)
        b.cbranch(b.icmp_signed("==", c, _const(ord('"'))), scan, string)

        # '[' (pos is past it): try to read numbers separated by commas up to ']'.
        b.position_at_end(array)
        b.store(b.sub(b.load(pos), _const(1)), start)
        b.store(b.load(pos), at)
        b.store(_const(0), count)
        self.skip_space(at)
        b.branch(element)

        b.position_at_end(element)
        outcome, value = self.number(at)
        with b.if_then(b.icmp_signed("==", outcome, _const(INEXACT))):
            b.ret(_const(INEXACT))
        is_number = b.icmp_signed("==", outcome, _const(_NUMBER))
        keep = self.block("keep")
        b.cbranch(is_number, keep, scan)
        b.position_at_end(keep)
        n = b.load(count)
        b.store(value, b.gep(self.values, [b.add(b.load(filled), n)]))
        b.store(b.add(n, _const(1)), count)
        self.skip_space(at)
        b.branch(separator)

        b.position_at_end(separator)
        c = self.char(b.load(at))
        comma = self.block("comma")
        switch = b.switch(c, scan)
        switch.add_case(_const(ord(",")), comma)
        switch.add_case(_const(ord("]")), closed)
        b.position_at_end(comma)
        b.store(b.add(b.load(at), _const(1)), at)
        self.skip_space(at)
        b.branch(element)

        # ']': record the array if it is long enough; either way the scan goes on after it.
        b.position_at_end(closed)
        end = b.add(b.load(at), _const(1))
        b.store(end, pos)
        n = b.load(count)
        record = self.block("record")
        b.cbranch(b.icmp_signed(">=", n, _const(MIN_NUMBERS)), record, scan)
        b.position_at_end(record)
        k = b.load(found)
        with b.if_then(b.icmp_signed(">=", k, self.max_spans)):
            b.ret(_const(TOO_MANY))
        first = b.load(filled)
        for i, word in enumerate((b.load(start), end, first, n)):
            b.store(word, b.gep(self.spans, [b.add(b.mul(k, _const(4)), _const(i))]))
        b.store(b.add(k, _const(1)), found)
        b.store(b.add(first, n), filled)
        b.branch(scan)

    def digits(self, at_slot, each) -> None:
        """Call each(digit value) for the digits at *at_slot, advancing past them."""
        b = self.b
        test, done = self.block("digits"), self.block("digits.done")
        b.branch(test)
        b.position_at_end(test)
        self.digit_step(at_slot, b.load(at_slot), each, test, done)
        b.position_at_end(done)

    def digit_step(self, at_slot, at, each, again, done) -> None:
        """From the current block: a digit at `at` goes to each(its value), moves *at_slot past it
        and on to block `again`; anything else to `done`."""
        b = self.b
        step = self.block("digit.step")
        c = self.char(at)
        b.cbranch(self.is_digit(c), step, done)
        b.position_at_end(step)
        each(b.sub(c, _const(ord("0"))))
        b.store(b.add(at, _const(1)), at_slot)
        b.branch(again)

    def significant_digits(self, at_slot, after_point: bool, one_digit) -> None:
        """The digits of an integer or fraction part at *at_slot, eight at a time while eight digits
        follow and the mantissa has room for them (fast_float's SWAR: one 64-bit load, a digit test and
        three multiplies), then one_digit(digit value) each; advances past them. Fewer than eight go one
        at a time: a word padded from them cost more than it saved (784 float32 reprs, 16 KB: 8.7 us
        so, 7.3 us so; 784 two-place decimals: 4.8 and 5.2; one digit at a time throughout: 11.6, 4.0)."""
        b = self.b
        mantissa, kept, significant = self.number_slots[:3]
        test, wide, word_test, take, tail, done = (
            self.block(f"significant.{n}") for n in ("test", "wide", "word", "take", "tail", "done"))
        b.branch(test)
        b.position_at_end(test)
        at = b.load(at_slot)
        room = b.and_(b.icmp_signed("<=", b.add(at, _const(8)), self.length),
                      b.icmp_signed("<=", b.add(b.load(kept), _const(8)), _const(_KEPT_DIGITS)))
        b.cbranch(room, wide, tail)

        b.position_at_end(wide)
        word = b.load(b.bitcast(b.gep(self.text, [at]), I64.as_pointer()), align=1)
        if after_point:  # leading zeros of a fraction only move the point: one_digit counts them
            leading_zero = self.block("significant.zero")
            leading = b.and_(b.icmp_signed("==", b.load(significant), _const(0)),
                             b.icmp_unsigned("==", b.and_(word, _const(0xFF)), _const(ord("0"))))
            b.cbranch(leading, leading_zero, word_test)
            b.position_at_end(leading_zero)   # then a word may follow
            self.digit_step(at_slot, at, one_digit, test, done)
        else:
            b.branch(word_test)
        b.position_at_end(word_test)
        # A byte's top bit is set here unless it is a digit.
        not_digits = b.and_(b.or_(b.add(word, _const(0x4646464646464646)), b.sub(word, _const(0x3030303030303030))),
                            _const(0x8080808080808080 - (1 << 64)))
        b.cbranch(b.icmp_unsigned("==", not_digits, _const(0)), take, tail)

        b.position_at_end(take)
        value = b.sub(word, _const(0x3030303030303030))
        value = b.add(b.mul(value, _const(10)), b.lshr(value, _const(8)))
        low, high = _const(0x000000FF000000FF), b.lshr(value, _const(16))
        value = b.lshr(b.add(b.mul(b.and_(value, low), _const(100 + (1000000 << 32))),
                             b.mul(b.and_(high, low), _const(1 + (10000 << 32)))), _const(32))
        b.store(b.add(b.mul(b.load(mantissa), _const(10 ** 8)), value), mantissa)
        b.store(b.add(b.load(kept), _const(8)), kept)
        b.store(b.add(b.load(significant), _const(8)), significant)
        b.store(b.add(at, _const(8)), at_slot)
        b.branch(test)

        b.position_at_end(tail)           # one at a time to the run's end
        self.digit_step(at_slot, b.load(at_slot), one_digit, tail, done)
        b.position_at_end(done)

    def number(self, at_slot):
        """(outcome, value) of the JSON number at *at_slot, which it advances past the number."""
        b = self.b
        mantissa, kept, significant, truncated, point, exponent, negative, integer = self.number_slots
        for slot in (mantissa, kept, significant, truncated, point, exponent):
            b.store(_const(0), slot)
        b.store(_const(1), integer)
        done = self.block("number.done")
        results = []    # (outcome, value, block) into done's phis

        def fail():
            results.append((_const(_NOT_NUMBER), ir.Constant(DOUBLE, 0.0), b.block))
            b.branch(done)

        def advance():
            b.store(b.add(b.load(at_slot), _const(1)), at_slot)

        def significant_digit(d, after_point: bool):
            """Go's readFloat: leading zeros only move the point; 19 digits are kept, the rest noted."""
            after = self.block("digit.after")
            if after_point:
                leading, counted = self.block("digit.leading"), self.block("digit.counted")
                b.cbranch(b.and_(b.icmp_signed("==", d, _const(0)),
                                 b.icmp_signed("==", b.load(significant), _const(0))), leading, counted)
                b.position_at_end(leading)
                b.store(b.sub(b.load(point), _const(1)), point)
                b.branch(after)
                b.position_at_end(counted)
            b.store(b.add(b.load(significant), _const(1)), significant)
            with b.if_else(b.icmp_signed("<", b.load(kept), _const(_KEPT_DIGITS))) as (then, otherwise):
                with then:
                    b.store(b.add(b.mul(b.load(mantissa), _const(10)), d), mantissa)
                    b.store(b.add(b.load(kept), _const(1)), kept)
                with otherwise:
                    with b.if_then(b.icmp_signed("!=", d, _const(0))):
                        b.store(_const(1), truncated)
            b.branch(after)
            b.position_at_end(after)

        c = self.char(b.load(at_slot))
        is_minus = b.icmp_signed("==", c, _const(ord("-")))
        b.store(b.zext(is_minus, I64), negative)
        with b.if_then(is_minus):
            advance()
        c = self.char(b.load(at_slot))
        zero, nonzero, bad, integer_done = (self.block(n) for n in
                                            ("number.zero", "number.nonzero", "number.bad", "number.integer"))
        is_zero = b.icmp_signed("==", c, _const(ord("0")))
        b.cbranch(is_zero, zero, nonzero)

        b.position_at_end(nonzero)
        int_first = self.block("number.first")
        b.cbranch(self.is_digit(c), int_first, bad)
        b.position_at_end(int_first)
        self.significant_digits(at_slot, False, lambda d: significant_digit(d, after_point=False))
        b.branch(integer_done)

        b.position_at_end(zero)   # a lone 0: a digit after it is a leading zero, which JSON forbids
        advance()
        b.cbranch(self.is_digit(self.char(b.load(at_slot))), bad, integer_done)

        b.position_at_end(bad)
        fail()

        b.position_at_end(integer_done)
        b.store(b.load(significant), point)
        fraction, fraction_digits, after_fraction = (self.block(n) for n in
                                                     ("number.point", "number.fraction", "number.after_fraction"))
        b.cbranch(b.icmp_signed("==", self.char(b.load(at_slot)), _const(ord("."))), fraction, after_fraction)
        b.position_at_end(fraction)
        b.store(_const(0), integer)
        advance()
        b.cbranch(self.is_digit(self.char(b.load(at_slot))), fraction_digits, bad)
        b.position_at_end(fraction_digits)
        self.significant_digits(at_slot, True, lambda d: significant_digit(d, after_point=True))
        b.branch(after_fraction)

        b.position_at_end(after_fraction)
        power, power_digits, value_block = (self.block(n) for n in
                                            ("number.exponent", "number.exponent_digits", "number.value"))
        b.cbranch(self.is_any(self.char(b.load(at_slot)), "eE"), power, value_block)
        b.position_at_end(power)
        b.store(_const(0), integer)
        advance()
        c = self.char(b.load(at_slot))
        minus_exponent = b.icmp_signed("==", c, _const(ord("-")))
        with b.if_then(self.is_any(c, "+-")):
            advance()
        b.cbranch(self.is_digit(self.char(b.load(at_slot))), power_digits, bad)
        b.position_at_end(power_digits)

        def exponent_digit(d):
            e = b.load(exponent)
            # past 10000 the number is out of any double's range already; the cap keeps e from wrapping
            b.store(b.select(b.icmp_signed("<", e, _const(10000)), b.add(b.mul(e, _const(10)), d), e), exponent)
        self.digits(at_slot, exponent_digit)
        e = b.load(exponent)
        b.store(b.add(b.load(point), b.select(minus_exponent, b.neg(e), e)), point)
        b.branch(value_block)

        b.position_at_end(value_block)
        sign = b.shl(b.load(negative), _const(63))
        m = b.load(mantissa)
        nonzero_value, zero_value = self.block("number.rounded"), self.block("number.zero_value")
        b.cbranch(b.icmp_signed("==", m, _const(0)), zero_value, nonzero_value)

        b.position_at_end(zero_value)   # "-0" (an integer) is 0.0, "-0.0" is -0.0
        bits = b.select(b.icmp_signed("!=", b.load(integer), _const(0)), _const(0), sign)
        results.append((_const(_NUMBER), b.bitcast(bits, DOUBLE), b.block))
        b.branch(done)

        b.position_at_end(nonzero_value)
        exp10 = b.sub(b.load(point), b.load(kept))
        is_truncated = b.icmp_signed("!=", b.load(truncated), _const(0))
        exact_product = b.and_(b.and_(b.not_(is_truncated), b.icmp_unsigned("<=", m, _const(1 << 53))),
                               b.icmp_unsigned("<=", b.add(exp10, _const(_EXACT_POWERS)), _const(2 * _EXACT_POWERS)))
        product, lemire = self.block("number.product"), self.block("number.lemire")
        b.cbranch(exact_product, product, lemire)

        # Clinger's fast path: both factors are exact doubles, so one multiply or divide rounds once
        # (Eisel-Lemire cannot decide some of these, 0.5 among them: its power of ten is rounded).
        b.position_at_end(product)
        factor = b.uitofp(m, DOUBLE)
        power = b.load(b.gep(self.exact_powers, [_const(0), b.select(b.icmp_signed("<", exp10, _const(0)),
                                                                     b.neg(exp10), exp10)]))
        scaled = b.select(b.icmp_signed("<", exp10, _const(0)), b.fdiv(factor, power), b.fmul(factor, power))
        results.append((_const(_NUMBER), b.bitcast(b.or_(b.bitcast(scaled, I64), sign), DOUBLE), b.block))
        b.branch(done)

        b.position_at_end(lemire)
        in_table = b.and_(b.icmp_signed(">=", exp10, _const(MIN_EXP10)), b.icmp_signed("<=", exp10, _const(MAX_EXP10)))
        rounded, inexact = self.block("number.in_table"), self.block("number.inexact")
        b.cbranch(in_table, rounded, inexact)
        b.position_at_end(rounded)
        ok, bits = self.eisel_lemire(m, exp10)
        rounded_ok, truncated_check, exact = (self.block(n) for n in
                                              ("number.rounded_ok", "number.truncated", "number.exact"))
        b.cbranch(ok, rounded_ok, inexact)
        b.position_at_end(rounded_ok)
        b.cbranch(is_truncated, truncated_check, exact)
        b.position_at_end(truncated_check)
        ok_up, bits_up = self.eisel_lemire(b.add(m, _const(1)), exp10)
        b.cbranch(b.and_(ok_up, b.icmp_unsigned("==", bits, bits_up)), exact, inexact)
        b.position_at_end(exact)
        results.append((_const(_NUMBER), b.bitcast(b.or_(bits, sign), DOUBLE), b.block))
        b.branch(done)
        b.position_at_end(inexact)
        results.append((_const(INEXACT), ir.Constant(DOUBLE, 0.0), b.block))
        b.branch(done)

        b.position_at_end(done)
        outcome, value = b.phi(I64, "outcome"), b.phi(DOUBLE, "value")
        for o, v, block in results:
            outcome.add_incoming(o, block)
            value.add_incoming(v, block)
        return outcome, value

    def multiply(self, x, y):
        """The 128-bit product of two uint64s as (high, low) words."""
        b = self.b
        product = b.mul(b.zext(x, I128), b.zext(y, I128))
        return b.trunc(b.lshr(product, ir.Constant(I128, 64)), I64), b.trunc(product, I64)

    def eisel_lemire(self, mantissa, exp10):
        """(ok, the double's bits without its sign) of mantissa * 10**exp10, for mantissa > 0 and exp10
        in the table's range; not ok where the result is subnormal or infinite. fast_float's
        compute_float, step for step."""
        b = self.b
        leading = b.call(self.ctlz, [mantissa, ir.Constant(I1, 0)])
        w = b.shl(mantissa, leading)
        index = b.sub(exp10, _const(MIN_EXP10))
        x_hi, x_lo = self.multiply(w, b.load(b.gep(self.high, [_const(0), index])))
        # Where the bits below the double's 55 are all ones, the power's low word can still carry into them.
        wider = b.icmp_unsigned("==", b.and_(x_hi, _const(0x1FF)), _const(0x1FF))
        y_hi, _ = self.multiply(w, b.load(b.gep(self.low, [_const(0), index])))
        merged_lo = b.add(x_lo, y_hi)
        merged_hi = b.add(x_hi, b.zext(b.icmp_unsigned("<", merged_lo, y_hi), I64))
        high, low = b.select(wider, merged_hi, x_hi), b.select(wider, merged_lo, x_lo)
        upper = b.lshr(high, _const(63))
        shift = b.add(upper, _const(9))
        result = b.lshr(high, shift)
        exp2 = b.sub(b.add(b.add(b.ashr(b.mul(exp10, _const(217706)), _const(16)), _const(63 + _BIAS)), upper),
                     leading)
        # An exact tie (possible only for these exponents) rounds to even: drop the bit that would round it up.
        tie = b.and_(b.and_(b.icmp_unsigned("<=", low, _const(1)),
                            b.icmp_unsigned("<=", b.add(exp10, _const(4)), _const(4 + 23))),
                     b.and_(b.icmp_unsigned("==", b.and_(result, _const(3)), _const(1)),
                            b.icmp_unsigned("==", b.shl(result, shift), high)))
        result = b.select(tie, b.and_(result, _const(-2)), result)
        result = b.lshr(b.add(result, b.and_(result, _const(1))), _const(1))
        carried = b.icmp_unsigned(">=", result, _const(2 << 52))
        exp2 = b.add(exp2, b.zext(carried, I64))
        ok = b.and_(b.icmp_signed(">", exp2, _const(0)), b.icmp_signed("<", exp2, _const(0x7FF)))
        bits = b.or_(b.shl(exp2, _const(52)), b.and_(result, _const((1 << 52) - 1)))
        return ok, bits
