"""col2im for the executor's conv_transpose2d, as a native loop.

A transposed convolution is a GEMM - its columns, (C_out*KH*KW, H*W) an image, are the weights'
transpose times the input's (C_in, H*W) - then col2im: each column value added into the output
position its tap reaches. This loop runs the adds output row by output row, the row staying in L1
from its bias to its last tap: per output row oy and kernel row i whose input row iy (oy = iy*SH +
i*DH - PH) is in the image, each kernel column j adds the input row's values to every SW-th output
(ox = ix*SW + j*DW - PW), then the floor (a fused ReLU's 0) where asked. Nothing is zeroed and no
value is read back from memory twice, where numpy's add.at-like scatter reads and writes the whole
output once per tap.

`scriptc_col2im_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): output channels
[start, end) of one image; ptrs = [columns, output, bias, floor]; meta = [H, W, KH, KW, OH, OW, SH,
SW, DH, DW, PH, PW, RS, floored, bias step, then per kernel column j the input columns [ix_lo, ix_hi)
whose output column is inside the output]; the columns' rows are RS elements apart (H*W, or more
where several images' columns lie side by side), the row of channel c, kernel row i and column j
being (c*KH + i)*KW + j; out[c] starts from bias[c * bias step] (a step of 0 and a zero for none).
The column bounds are worked out in Python (col2im_meta); the row bounds need one division per
output row and kernel row.
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .im2col import _by_stride
from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_col2im_f32", ir.FloatType()), "float64": ("scriptc_col2im_f64", ir.DoubleType())}
_WORDS = 15


def col2im_meta(h: int, w: int, kh: int, kw: int, oh: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                ph: int, pw: int, row_stride: int, floored: bool, bias_step: int) -> list[int]:
    """The meta words of one transposed convolution's geometry (see the module docstring)."""
    bounds = []
    for j in range(kw):
        # input columns ix with 0 <= ix*sw + j*dw - pw < ow
        offset = j * dw - pw
        lo = min(w, max(0, -(offset // sw)))
        hi = max(lo, min(w, (ow - 1 - offset) // sw + 1))
        bounds += [lo, hi]
    return [h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, row_stride, int(floored), bias_step] + bounds


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (cols, out, bias, floor), words = loop_arguments(b, args, element, 4, _WORDS)
    h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, row_stride, floored, bias_step = words
    meta = args[3]

    def const(value):
        return ir.Constant(I64, value)

    def word(index):
        return b.load(b.gep(meta, [index]))

    floor_value = b.load(floor)
    is_floored = b.icmp_signed("!=", floored, const(0))
    taps = b.mul(kh, kw)

    def channel(c):
        start_value = b.load(b.gep(bias, [b.mul(c, bias_step)]))
        channel_cols = b.gep(cols, [b.mul(b.mul(c, taps), row_stride)])
        channel_out = b.gep(out, [b.mul(b.mul(c, oh), ow)])

        def out_row(oy):
            row = b.gep(channel_out, [b.mul(oy, ow)])
            loop(b, const(0), ow, lambda ox: b.store(start_value, b.gep(row, [ox])), "fill")

            def kernel_row(i):
                reach = b.sub(b.add(oy, ph), b.mul(i, dh))  # = iy * SH where it is an input row
                iy = b.sdiv(reach, sh)
                inside = b.and_(b.icmp_signed(">=", reach, const(0)),
                                b.and_(b.icmp_signed("==", b.srem(reach, sh), const(0)),
                                       b.icmp_signed("<", iy, h)))
                with b.if_then(inside):
                    tap_cols = b.gep(channel_cols, [b.add(b.mul(b.mul(i, kw), row_stride), b.mul(iy, w))])

                    def kernel_col(j):
                        source = b.gep(tap_cols, [b.mul(j, row_stride)])
                        target = b.gep(row, [b.sub(b.mul(j, dw), pw)])
                        lo = word(b.add(const(_WORDS), b.mul(j, const(2))))
                        hi = word(b.add(const(_WORDS + 1), b.mul(j, const(2))))

                        def add(stride):
                            def step(ix):
                                at = b.gep(target, [b.mul(ix, stride)])
                                b.store(b.fadd(b.load(at), b.load(b.gep(source, [ix]))), at)
                            loop(b, lo, hi, step, "ix")
                        _by_stride(b, sw, add)
                    loop(b, const(0), kw, kernel_col, "j")
            loop(b, const(0), kh, kernel_row, "i")
            with b.if_then(is_floored):
                def clamp(ox):
                    at = b.gep(row, [ox])
                    value = b.load(at)
                    # (a NaN stays NaN, as numpy's maximum keeps it)
                    b.store(b.select(b.fcmp_ordered("<", value, floor_value), floor_value, value), at)
                loop(b, const(0), ow, clamp, "floor")
        loop(b, const(0), oh, out_row, "oy")
    loop(b, start, end, channel, "c")
    b.ret_void()

