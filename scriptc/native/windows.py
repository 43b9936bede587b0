"""Windowed loops over planes a vector of outputs at a time (depthwise.py, pool.py).

A depthwise convolution or a pooling goes through its planes a vector of outputs at a time: per
window tap, the tap's input for each lane (masked off where the tap falls on the padding) combined
into a register from the start to the store (Gathered.windows). How a tap's values are read
depends on the plane: where each output's input is its own position plus a constant (stride 1, the
plane keeping its size) by one masked load over consecutive outputs across rows; on rows of a vector
or more at stride 1 or 2, a vector of one row at a time by masked loads; elsewhere by a gather -
which this CPU runs at ~14 cycles, against a masked load's one (the gathers alone ran MobileNetV2's
depthwise layers at 7 GFLOP/s). 3x3 windows get their own copy of the loops, unrolled. Each output's
row and column come from `positions` tables (Python makes them, one per output size), so the loop
divides nothing."""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import splat as vector_splat

I32, I64 = ir.IntType(32), ir.IntType(64)
VECTOR_BYTES = 64
# Rows shorter than this many vectors go by gathers (and rows of any stride but 1), for windows of up
# to GATHER_MAX_TAPS taps: a global average pool (a 32x32 window, one output a plane) would gather
# each input into one lane of a vector - 1024 gathers a plane, against 1024 loads in the row loop.
GATHER_BELOW_VECTORS = 2
GATHER_MAX_TAPS = 64
# The widest window rows() takes (its per-column load masks are kept in a fixed array).
ROW_MAX_KW = 16
# rows() takes rows of at least this part of a vector's outputs (at stride 2, rows of 4 outputs went
# faster by gathers, rows of 8 as fast).
ROW_MIN_VECTOR_FRACTION = 0.5


def inside_range(b: ir.IRBuilder, first, dilation, size, count):
    """[lo, hi) of the window offsets k < count with 0 <= first + k * dilation < size (i64 values)."""
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    # lo = ceil(-first / dilation) where first < 0; hi = floor((size - 1 - first) / dilation) + 1
    lo = b.select(b.icmp_signed("<", first, zero), b.sdiv(b.sub(b.sub(dilation, one), first), dilation), zero)
    last = b.sub(b.sub(size, one), first)
    hi = b.select(b.icmp_signed("<", last, zero), zero, b.add(b.sdiv(last, dilation), one))
    hi = b.select(b.icmp_signed("<", hi, count), hi, count)
    return lo, b.select(b.icmp_signed("<", hi, lo), lo, hi)


def lanes(dtype: str) -> int:
    """Outputs per vector for a dtype name."""
    return VECTOR_BYTES // (8 if dtype == "float64" else 4)


@functools.lru_cache(maxsize=64)
def positions(oh: int, ow: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The output row and column of each position of an (OH, OW) plane, as int32, padded to whole
    vectors with a row no tap reaches (so its lanes load nothing); read only (shared)."""
    count = -(-oh * ow // lanes(dtype)) * lanes(dtype)
    flat = np.arange(count, dtype=np.int64)
    rows = np.where(flat < oh * ow, flat // max(ow, 1), -(1 << 24)).astype(np.int32)
    columns = (flat % max(ow, 1)).astype(np.int32)
    rows.flags.writeable = columns.flags.writeable = False
    return rows, columns


class Gathered:
    """The vector types, intrinsics and the accumulator (allocated where this is made: in the entry
    block) of one loop's gathered planes."""

    def __init__(self, b: ir.IRBuilder, element):
        self.b, self.element = b, element
        self.width = width = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
        self.vector, self.indices = ir.VectorType(element, width), ir.VectorType(I32, width)
        masks = ir.VectorType(ir.IntType(1), width)
        self.pointers = ir.VectorType(element.as_pointer(), width)
        suffix = f"v{width}{'f64' if element == ir.DoubleType() else 'f32'}"
        module = b.module
        self.gather = ir.Function(module, ir.FunctionType(self.vector, [self.pointers, I32, masks, self.vector]),
                                  f"llvm.masked.gather.{suffix}.v{width}p0")
        self.masked_load = ir.Function(module, ir.FunctionType(self.vector, [self.vector.as_pointer(), I32, masks,
                                                                             self.vector]),
                                       f"llvm.masked.load.{suffix}.p0")
        self.masked_store = ir.Function(module, ir.FunctionType(ir.VoidType(), [self.vector, self.vector.as_pointer(),
                                                                                I32, masks]),
                                        f"llvm.masked.store.{suffix}.p0")
        self.maximum = ir.Function(module, ir.FunctionType(self.vector, [self.vector, self.vector]),
                                   f"llvm.maximum.{suffix}")
        self.accumulator = b.alloca(self.vector)
        # rows()'s last window row's taps combined, and which input row they are (separable windows)
        self.row_taps, self.row_of_taps = b.alloca(self.vector), b.alloca(I64)
        self.column_masks = b.alloca(masks, size=ir.Constant(I64, 2 * ROW_MAX_KW))
        self.align = ir.Constant(I32, 8 if element == ir.DoubleType() else 4)

    def splat(self, scalar, kind=None):
        return vector_splat(self.b, scalar, kind or self.vector)

    def windows(self, x, out, tables, geometry, start, combine, finish, passthrough, by_rows,
                separable: bool = False) -> None:
        """out (the plane's OH*OW outputs) = finish(the window's taps combined, first position, store
        mask) for each vector of outputs: the accumulator starts at `start` (a vector),
        combine(accumulator, values, ky, kx) takes in each tap's values (`passthrough`, a constant,
        in lanes whose tap is padding). `geometry`: (H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW) as
        i64 values; `tables`: the positions() tables' pointers (i32); by_rows(): the caller's own
        loop, for the planes none of these take (long rows at a stride past 2, windows past
        GATHER_MAX_TAPS taps). `separable`: combine's result does not depend on the order of its
        values nor on the tap (a maximum), so that rows() may combine each window row's taps first and
        take the combined row again where the next output row's window starts on it.

        The ways, first that applies: where the input position of each tap is the output's plus a
        constant (stride 1 along rows, and rows of outputs as long as the rows of input they step
        over: a convolution padded to keep its size), vectors of the plane's outputs across rows,
        each tap a masked load of consecutive inputs; rows of at least ROW_MIN_VECTOR_FRACTION of a
        vector at stride 1 or 2, a vector of a row at a time (rows()); other short or strided rows,
        vectors across rows, each tap a gather."""
        b, three, one = self.b, ir.Constant(I64, 3), ir.Constant(I64, 1)
        # 3x3 windows without dilation (most of them) with the window's size and dilation constants:
        # the taps' loops unroll, and the rows' window bounds divide by nothing (a division by the
        # dilation per output row was most of SqueezeNet's first pool's time); other windows without
        # dilation, with that a constant
        square_window = b.and_(b.icmp_signed("==", geometry[4], three), b.icmp_signed("==", geometry[5], three))
        undilated = b.and_(b.icmp_signed("==", geometry[10], one), b.icmp_signed("==", geometry[11], one))
        with b.if_else(b.and_(square_window, undilated)) as (square, other):
            with square:
                self._windows(x, out, tables, (*geometry[:4], three, three, *geometry[6:10], one, one), start, combine,
                              finish, passthrough, by_rows, separable)
            with other:
                with b.if_else(undilated) as (plain, dilated):
                    with plain:
                        self._windows(x, out, tables, (*geometry[:10], one, one), start, combine, finish, passthrough,
                                      by_rows, separable)
                    with dilated:
                        self._windows(x, out, tables, geometry, start, combine, finish, passthrough, by_rows,
                                      separable)

    def _windows(self, x, out, tables, geometry, start, combine, finish, passthrough, by_rows, separable) -> None:
        b = self.b
        h, w, oh, ow, kh, kw, sh, sw = geometry[:8]
        one, taps = ir.Constant(I64, 1), b.mul(kh, kw)
        few_taps = b.icmp_signed("<=", taps, ir.Constant(I64, GATHER_MAX_TAPS))
        contiguous = b.and_(few_taps, b.and_(b.icmp_signed("==", sw, one), b.icmp_signed("==", b.mul(sh, w), ow)))
        long_rows = b.icmp_signed(">=", ow, ir.Constant(I64, int(self.width * ROW_MIN_VECTOR_FRACTION)))
        vector_rows = b.and_(long_rows, b.and_(b.icmp_signed("<=", sw, ir.Constant(I64, 2)),
                                               b.icmp_signed("<=", kw, ir.Constant(I64, ROW_MAX_KW))))
        with b.if_else(contiguous) as (loads, other):
            with loads:
                self._plane(x, out, tables, geometry, start, combine, finish, passthrough, True)
            with other:
                with b.if_else(vector_rows) as (rows, rest):
                    with rows:
                        self.rows(x, out, geometry, start, combine, finish, passthrough, separable)
                    with rest:
                        with b.if_else(self.applies(ow, sw, taps)) as (gathers, own):
                            with gathers:
                                self._plane(x, out, tables, geometry, start, combine, finish, passthrough, False)
                            with own:
                                by_rows()

    def _plane(self, x, out, tables, geometry, start, combine, finish, passthrough, contiguous: bool) -> None:
        """Vectors of the plane's outputs across rows, each tap's values by a masked load
        (`contiguous`) or a gather."""
        b, indices = self.b, self.indices
        h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw = geometry
        zero = ir.Constant(I64, 0)
        addresses = ir.VectorType(I64, self.width)
        element_bytes = ir.Constant(addresses, [8 if self.element == ir.DoubleType() else 4] * self.width)

        def narrow(value):
            return self.splat(b.trunc(value, I32), indices)

        lane = ir.Constant(indices, list(range(self.width)))
        total = self.splat(b.trunc(b.mul(oh, ow), I32), indices)
        base = self.splat(b.ptrtoint(x, I64), addresses)
        height, row_length = narrow(h), narrow(w)
        zeros = ir.Constant(indices, [0] * self.width)

        def chunk(first):
            rows = b.load(b.bitcast(b.gep(tables[0], [first]), indices.as_pointer()), align=4)
            columns = b.load(b.bitcast(b.gep(tables[1], [first]), indices.as_pointer()), align=4)
            top, left = b.mul(rows, narrow(sh)), b.mul(columns, narrow(sw))
            b.store(start, self.accumulator)

            def tap_row(ky):
                iy = b.add(top, narrow(b.sub(b.mul(ky, dh), ph)))
                inside_rows = b.and_(b.icmp_signed(">=", iy, zeros), b.icmp_signed("<", iy, height))
                line = b.mul(iy, row_length)

                def tap(kx):
                    ix = b.add(left, narrow(b.sub(b.mul(kx, dw), pw)))
                    inside = b.and_(inside_rows, b.and_(b.icmp_signed(">=", ix, zeros),
                                                        b.icmp_signed("<", ix, row_length)))
                    if contiguous:  # the lanes' inputs follow one another from the first lane's
                        shift = b.add(b.mul(b.sub(b.mul(ky, dh), ph), w), b.sub(b.mul(kx, dw), pw))
                        values = self._masked(b.gep(x, [b.add(first, shift)]), inside, passthrough)
                    else:
                        offsets = b.mul(b.sext(b.add(line, ix), addresses), element_bytes)
                        values = b.call(self.gather, [b.inttoptr(b.add(base, offsets), self.pointers), self.align,
                                                      inside, passthrough])
                    b.store(combine(b.load(self.accumulator), values, ky, kx), self.accumulator)
                loop(b, zero, kw, tap, "gx")
            loop(b, zero, kh, tap_row, "gy")
            stored = b.icmp_signed("<", b.add(self.splat(b.trunc(first, I32), indices), lane), total)
            result = finish(b.load(self.accumulator), first, stored)
            b.call(self.masked_store, [result, b.bitcast(b.gep(out, [first]), self.vector.as_pointer()), self.align,
                                       stored])
        loop(b, zero, b.mul(oh, ow), chunk, "chunk", step=self.width)

    def rows(self, x, out, geometry, start, combine, finish, passthrough, separable: bool = False) -> None:
        """windows()'s results, a vector of one output row's outputs at a time (rows of any length,
        windows of up to ROW_MAX_KW columns, stride 1 or 2 along the row): each tap's
        values come from a masked load of the input row (the even elements of two, at stride 2; in
        the 3x3 loops the odd ones are the next tap's) instead of a gather, and the window's rows
        outside the image are skipped. Where `separable`
        (windows()) and each output row's window starts on the last row of the one before (an
        undilated window one row taller than its stride: SqueezeNet's 3x3 pools at stride 2), each window row's taps
        are combined apart and that row's result is taken again by the next output row: 2 rows of taps
        an output row instead of 3."""
        b = self.b
        last_row = b.mul(b.sub(geometry[4], ir.Constant(I64, 1)), geometry[10])  # (the window's last row's offset)
        shared = b.icmp_signed("==", last_row, geometry[6]) if separable else None

        def strided(stride: int) -> None:
            if shared is None:
                self._rows(x, out, geometry, start, combine, finish, passthrough, stride, False)
                return
            with b.if_else(shared) as (reused, plain):
                with reused:
                    self._rows(x, out, geometry, start, combine, finish, passthrough, stride, True)
                with plain:
                    self._rows(x, out, geometry, start, combine, finish, passthrough, stride, False)
        with b.if_else(b.icmp_signed("==", geometry[7], ir.Constant(I64, 1))) as (unit, double):
            with unit:
                strided(1)
            with double:
                strided(2)

    def _rows(self, x, out, geometry, start, combine, finish, passthrough, stride: int, reused: bool) -> None:
        b, indices, width = self.b, self.indices, self.width
        h, w, oh, ow, kh, kw, sh, _, ph, pw, dh, dw = geometry
        zero, two = ir.Constant(I64, 0), ir.Constant(I64, 2)
        lane = ir.Constant(indices, list(range(width)))
        zeros = ir.Constant(indices, [0] * width)
        row_length = self.splat(b.trunc(w, I32), indices)
        # at stride 2, element e of the two vectors loaded feeds output lane e // 2 (even e only)
        evens = ir.Constant(ir.VectorType(I32, width), [2 * k for k in range(width)])
        odds = ir.Constant(ir.VectorType(I32, width), [2 * k + 1 for k in range(width)])
        # at stride 2 with the window's width and dilation 1 constants (the 3x3 loops), the odd elements
        # of the two vectors loaded for tap kx are tap kx + 1's: a load of two taps
        paired = stride == 2 and all(isinstance(v, ir.Constant) for v in (kw, dw)) and dw.constant == 1

        def left_of(first_column, kx):
            return b.sub(b.add(b.mul(first_column, ir.Constant(I64, stride)), b.mul(kx, dw)), pw)

        def chunk(first_column):
            remaining = b.trunc(b.sub(ow, first_column), I32)
            stored = b.icmp_signed("<", lane, self.splat(remaining, indices))

            def column_masks(kx):
                """The lanes each window column loads (inside the row, for an output stored): the
                same on every output row of the chunk."""
                left = self.splat(b.trunc(left_of(first_column, kx), I32), indices)
                for half in range(stride):
                    offsets = ir.Constant(indices, [k + half * width for k in range(width)])
                    columns = b.add(left, offsets)
                    inside = b.and_(b.icmp_signed(">=", columns, zeros), b.icmp_signed("<", columns, row_length))
                    if stride == 2:
                        even = b.icmp_signed("==", b.and_(offsets, ir.Constant(indices, [1] * width)), zeros)
                        wanted = b.icmp_signed("<", b.lshr(offsets, ir.Constant(indices, [1] * width)),
                                               self.splat(remaining, indices))
                        wanted = wanted if paired else b.and_(even, wanted)
                    else:
                        wanted = stored
                    b.store(b.and_(inside, wanted), b.gep(self.column_masks, [b.add(b.mul(kx, two),
                                                                                    ir.Constant(I64, half))]))
            loop(b, zero, kw, column_masks, "masks")
            b.store(ir.Constant(I64, -1), self.row_of_taps)  # (no row's yet: the masks are this chunk's)

            def out_row(oy):
                top = b.sub(b.mul(oy, sh), ph)
                ky_lo, ky_hi = inside_range(b, top, dh, h, kh)
                b.store(start, self.accumulator)

                def window_row(ky):
                    row = b.add(top, b.mul(ky, dh))
                    line = b.gep(x, [b.mul(row, w)])

                    def taps(into):
                        def halves(kx):
                            at = b.gep(line, [left_of(first_column, kx)])
                            return [self._masked(b.gep(at, [ir.Constant(I64, half * width)]),
                                                 b.load(b.gep(self.column_masks, [b.add(b.mul(kx, two),
                                                                                        ir.Constant(I64, half))])),
                                                 passthrough) for half in range(stride)]

                        def tap(kx):
                            loaded = halves(kx)
                            values = loaded[0] if stride == 1 else b.shuffle_vector(loaded[0], loaded[1], evens)
                            b.store(combine(b.load(into), values, ky, kx), into)
                        if not paired:
                            loop(b, zero, kw, tap, "rx")
                            return
                        for kx in range(0, kw.constant, 2):
                            loaded = halves(ir.Constant(I64, kx))
                            for column, chosen in ((kx, evens), (kx + 1, odds))[:kw.constant - kx]:
                                values = b.shuffle_vector(loaded[0], loaded[1], chosen)
                                b.store(combine(b.load(into), values, ky, ir.Constant(I64, column)), into)
                    if not reused:
                        taps(self.accumulator)
                        return
                    with b.if_then(b.icmp_signed("!=", row, b.load(self.row_of_taps))):
                        b.store(start, self.row_taps)
                        taps(self.row_taps)
                        b.store(row, self.row_of_taps)
                    b.store(combine(b.load(self.accumulator), b.load(self.row_taps), ky, zero), self.accumulator)
                loop(b, ky_lo, ky_hi, window_row, "ry")
                first = b.add(b.mul(oy, ow), first_column)
                result = finish(b.load(self.accumulator), first, stored)
                b.call(self.masked_store, [result, b.bitcast(b.gep(out, [first]), self.vector.as_pointer()),
                                           self.align, stored])
            loop(b, zero, oh, out_row, "row")
        loop(b, zero, ow, chunk, "column", step=width)

    def _masked(self, pointer, mask, passthrough):
        return self.b.call(self.masked_load, [self.b.bitcast(pointer, self.vector.as_pointer()), self.align, mask,
                                              passthrough])

    def applies(self, ow, sw, taps):
        """Whether a plane of rows of `ow` outputs at stride `sw`, windows of `taps` taps, goes by
        gathers (i1)."""
        b = self.b
        short = b.or_(b.icmp_signed("<", ow, ir.Constant(I64, GATHER_BELOW_VECTORS * self.width)),
                      b.icmp_signed("!=", sw, ir.Constant(I64, 1)))
        return b.and_(short, b.icmp_signed("<=", taps, ir.Constant(I64, GATHER_MAX_TAPS)))
