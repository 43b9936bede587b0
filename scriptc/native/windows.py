"""Windowed loops over small planes a vector of outputs at a time (depthwise.py, pool.py).

A depthwise convolution or a pooling whose output rows are short (2-16 outputs: a loop per window
row and output row then costs more to set up than it computes) or strided (loads that do not
vectorize) goes through the plane LANES consecutive outputs at a time instead, across rows: per
window tap, one masked gather of the tap's input for each output (masked off where the tap falls on
the padding), combined into a register from the start to the store. Each output's row and column
come from `positions` tables (Python makes them, one per output size), so the loop divides nothing.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

I32, I64 = ir.IntType(32), ir.IntType(64)
VECTOR_BYTES = 64
# Rows shorter than this many vectors go by gathers (and rows of any stride but 1).
GATHER_BELOW_VECTORS = 2


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
        self.align = ir.Constant(I32, 8 if element == ir.DoubleType() else 4)

    def splat(self, scalar, kind=None):
        b, kind = self.b, kind or self.vector
        return b.shuffle_vector(b.insert_element(ir.Constant(kind, ir.Undefined), scalar, ir.Constant(I32, 0)),
                                ir.Constant(kind, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, self.width), [0] * self.width))

    def plane(self, x, out, tables, geometry, start, combine, finish, passthrough) -> None:
        """out (the plane's OH*OW outputs) = finish(the window's taps combined, first position, store
        mask) for each vector of outputs: the accumulator starts at `start` (a vector),
        combine(accumulator, values, ky, kx) takes in each tap's gathered values (`passthrough`, a
        constant, in lanes whose tap is padding). `geometry`: (H, W, OH, OW, KH, KW, SH, SW, PH, PW,
        DH, DW) as i64 values; `tables`: the positions() tables' pointers (i32)."""
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

    def applies(self, ow, sw):
        """Whether a plane of rows of `ow` outputs at stride `sw` goes by gathers (i1)."""
        b = self.b
        return b.or_(b.icmp_signed("<", ow, ir.Constant(I64, GATHER_BELOW_VECTORS * self.width)),
                     b.icmp_signed("!=", sw, ir.Constant(I64, 1)))
