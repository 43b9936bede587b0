"""col2im for the executor's conv_transpose2d, as a native loop.

A transposed convolution is a GEMM - its columns, (C_out*KH*KW, H*W) an image, are the weights'
transpose times the input's (C_in, H*W) - then col2im: each column value added into the output
position its tap reaches. This loop does it a channel at a time in a plane of the output with its
padding around it (PLANE_H x PLANE_W, a few KB: it stays in L1), so that no tap needs bounds: the
plane zeroed, each tap (i, j) adds its input rows to every SW-th value of the plane's rows iy*SH +
i*DH from column j*DW, and the plane's window at (PH, PW) is copied out with the bias added and the
floor (a fused ReLU's 0) applied where asked, and a ceiling after it (a ReLU6's 6), or a LeakyReLU's
slope. At stride 2
(dilation 1) taps j and j + 1 fill the even and odd values of one stretch of a row: a vector of each
per step, interleaved, one wide add (the vectorizer leaves a stride-2 store scalar). numpy's
add.at-like scatter reads and writes the whole output once per tap instead.

`scriptc_col2im_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): output channels
[start, end) of one image; ptrs = [columns, output, bias, bounds, planes]; meta = [H, W, KH, KW, OH,
OW, SH, SW, DH, DW, PH, PW, RS, epilogue, bias step, PLANE_H, PLANE_W] (epilogue: 0 none, 1 the floor
bounds[0], 2 the floor and the ceiling bounds[1], 3 a LeakyReLU's slope bounds[2]: heads.epilogue()); the
columns' rows are RS
elements apart (H*W, or more where several images' columns lie side by side), the row of channel c,
kernel row i and column j being (c*KH + i)*KW + j; out[c] is bias[c * bias step] (a step of 0 and a
zero for none) plus its taps; channel c's plane is planes[c * PLANE_H * PLANE_W:] (each thread's
channels have their own).
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_col2im_f32", ir.FloatType()), "float64": ("scriptc_col2im_f64", ir.DoubleType())}
# Input columns a paired step adds (twice as many outputs): DCGAN's rows are 4-32 wide.
PAIR_LANES = 8


def plane_size(h: int, w: int, kh: int, kw: int, oh: int, ow: int, sh: int, sw: int, dh: int, dw: int,
               ph: int, pw: int) -> tuple[int, int]:
    """(PLANE_H, PLANE_W): every position a tap reaches, and the output's window (output_padding can
    take it past the last tap)."""
    return (max((h - 1) * sh + (kh - 1) * dh + 1, ph + oh), max((w - 1) * sw + (kw - 1) * dw + 1, pw + ow))


def col2im_meta(h: int, w: int, kh: int, kw: int, oh: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                ph: int, pw: int, row_stride: int, mode: int, bias_step: int) -> list[int]:
    """The meta words of one transposed convolution's geometry (see the module docstring)."""
    return [h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, row_stride, mode, bias_step,
            *plane_size(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw)]


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (cols, out, bias, bounds, planes), words = loop_arguments(b, args, element, 5, 17)
    h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, row_stride, mode, bias_step, plane_h, plane_w = words

    def const(value):
        return ir.Constant(I64, value)
    zero = ir.Constant(element, 0.0)
    floor_value, ceiling_value, slope_value = (b.load(b.gep(bounds, [const(k)])) for k in (0, 1, 2))
    is_leaky = b.icmp_signed("==", mode, const(3))
    is_floored = b.icmp_signed("!=", mode, const(0))
    is_clamped = b.icmp_signed(">", mode, const(1))
    paired = b.and_(b.icmp_signed("==", sw, const(2)), b.icmp_signed("==", dw, const(1)))
    plane_count = b.mul(plane_h, plane_w)

    def channel(c, four_wide: bool):
        """Channel c's plane and output; `four_wide`: a kernel 4 wide at stride 2, dilation 1
        (DCGAN's), its two pairs of taps unrolled."""
        plane = b.gep(planes, [b.mul(c, plane_count)])
        loop(b, const(0), plane_count, lambda k: b.store(zero, b.gep(plane, [k])), "zero")
        channel_cols = b.gep(cols, [b.mul(b.mul(b.mul(c, kh), kw), row_stride)])

        def kernel_row(i):
            def input_row(iy):
                line = b.gep(plane, [b.mul(b.add(b.mul(iy, sh), b.mul(i, dh)), plane_w)])
                tap_row = b.gep(channel_cols, [b.add(b.mul(b.mul(i, kw), row_stride), b.mul(iy, w))])

                def tap(j, stride):
                    source, target = b.gep(tap_row, [b.mul(j, row_stride)]), b.gep(line, [b.mul(j, dw)])

                    def add(ix):
                        at = b.gep(target, [b.mul(ix, stride)])
                        b.store(b.fadd(b.load(at), b.load(b.gep(source, [ix]))), at)
                    loop(b, const(0), w, add, "ix")

                if four_wide:
                    for j in (0, 2):
                        _pair(b, element, b.gep(tap_row, [b.mul(const(j), row_stride)]), row_stride,
                              b.gep(line, [const(j)]), w)
                    return
                with b.if_else(paired) as (two, other):
                    with two:
                        loop(b, const(0), b.sub(kw, const(1)),
                             lambda j: _pair(b, element, b.gep(tap_row, [b.mul(j, row_stride)]), row_stride,
                                             b.gep(line, [j]), w), "jj", step=2)
                        with b.if_then(b.icmp_signed("!=", b.srem(kw, const(2)), const(0))):
                            tap(b.sub(kw, const(1)), const(2))
                    with other:
                        loop(b, const(0), kw, lambda j: tap(j, sw), "j")
            loop(b, const(0), h, input_row, "iy")
        loop(b, const(0), kh, kernel_row, "i")

        start_value = b.load(b.gep(bias, [b.mul(c, bias_step)]))
        channel_out = b.gep(out, [b.mul(b.mul(c, oh), ow)])

        def out_row(oy):
            line = b.gep(plane, [b.add(b.mul(b.add(oy, ph), plane_w), pw)])
            row = b.gep(channel_out, [b.mul(oy, ow)])

            def store(ox):
                value = b.fadd(b.load(b.gep(line, [ox])), start_value)
                # (a NaN stays NaN, as numpy's maximum keeps it)
                low = b.and_(is_floored, b.fcmp_ordered("<", value, floor_value))
                value = b.select(low, floor_value, value)
                high = b.and_(is_clamped, b.fcmp_ordered(">", value, ceiling_value))
                value = b.select(high, ceiling_value, value)
                sloped = b.and_(is_leaky, b.fcmp_unordered("<=", value, zero))
                b.store(b.select(sloped, b.fmul(value, slope_value), value), b.gep(row, [ox]))
            loop(b, const(0), ow, store, "ox")
        loop(b, const(0), oh, out_row, "oy")
    with b.if_else(b.and_(paired, b.icmp_signed("==", kw, const(4)))) as (four_wide, other):
        with four_wide:
            loop(b, start, end, lambda c: channel(c, True), "c4")
        with other:
            loop(b, start, end, lambda c: channel(c, False), "c")
    b.ret_void()


def _pair(b: ir.IRBuilder, element, even, row_stride, target, w) -> None:
    """Taps j (its input row at `even`) and j + 1 (row_stride further) at stride 2 into the plane row
    from `target` (tap j's column 0): PAIR_LANES input columns of each per step, interleaved and
    added to twice as many values, then half as many per step, then the rest one by one."""
    align = 8 if element == ir.DoubleType() else 4
    odd = b.gep(even, [row_stride])
    two = ir.Constant(I64, 2)
    done = ir.Constant(I64, 0)
    for lanes in (PAIR_LANES, PAIR_LANES // 2):
        narrow, wide = ir.VectorType(element, lanes), ir.VectorType(element, 2 * lanes)
        order = ir.Constant(ir.VectorType(ir.IntType(32), 2 * lanes),
                            [k // 2 + (k % 2) * lanes for k in range(2 * lanes)])
        end = b.add(done, b.mul(b.sdiv(b.sub(w, done), ir.Constant(I64, lanes)), ir.Constant(I64, lanes)))

        def step(ix, narrow=narrow, wide=wide, order=order):
            at = b.bitcast(b.gep(target, [b.mul(ix, two)]), wide.as_pointer())
            pair = b.shuffle_vector(b.load(b.bitcast(b.gep(even, [ix]), narrow.as_pointer()), align=align),
                                    b.load(b.bitcast(b.gep(odd, [ix]), narrow.as_pointer()), align=align), order)
            b.store(b.fadd(b.load(at, align=align), pair), at, align=align)
        loop(b, done, end, step, f"ix{lanes}", step=lanes)
        done = end

    def rest(source, place):
        def add(ix):
            at = b.gep(place, [b.mul(ix, two)])
            b.store(b.fadd(b.load(at), b.load(b.gep(source, [ix]))), at)
        loop(b, done, w, add, "ixr")
    rest(even, target)
    rest(odd, b.gep(target, [ir.Constant(I64, 1)]))
