"""The transforms of a 3x3 stride-1 convolution by Winograd's F(2x2, 3x3), as native loops.

A tile of 2x2 outputs of one output channel takes 16 multiplies per input channel this way, where
the tap products take 36: the 4x4 input tile d around it (padding 1) becomes V = B^T d B, the
weights g (3x3) U = G g G^T (once, when the program is built: weights()), and the outputs are
Y = A^T M A of M, the sum over input channels of U * V, element by element - 16 products of the
weights' U by the image's V, one per position of the 4x4 tile, each a GEMM (O x C by C x tiles).
B and A hold only 0 and +-1 (the image's transforms are adds), G also +-1/2 (the weights' U is made
in float64 and rounded once): the results differ from the direct sums by the reordered sums'
rounding, as a GEMM's blocking would. A NaN reaches the outputs whose window
holds it, as the direct sums take it; an infinite input can give NaN where they give +-inf (the
transforms subtract it from itself).

`scriptc_winograd_input_f32` / `_f64` (functions()) have the kernel signature (start, end, ptrs,
meta): rows [start, end) of C * R (input channel, tile row), ptrs = [the padded image, V]; the image
as a stride-1 tap product's phase reads it (tap_products.tap_plan: planes of rows of WQ =
W + 1, each row's first element its left padding and the row before's right padding, a zero row
above and below, and at least one zero after the last plane), from the tile row's first padded row;
V (16, C, N) for N tiles, R rows of TW; meta = [C, plane, WQ, TW, R, N]. TW is a multiple of the
vector's lanes (takes()): each vector holds a lane's worth of a row's tiles, their columns split out
of two loads by even and odd lanes.

`scriptc_winograd_output_f32` / `_f64`: rows [start, end) of O * R (output channel, tile row), ptrs
= [M (16, O, N), out, bias, bounds]: out's first value of the tile rows, its planes PLANE apart, its
rows ROW apart; meta = [O, N, TW, R, PLANE, ROW, mode, bias step, whether to zero the element after
each row's last] (the epilogue as gemm.py's: heads.epilogue; the zero: the right padding of the next
convolution's padded planes, runtime/padded_planes.py).
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .gemm import epilogue_values, lanes
from .loops import splat
from .threads import KERNEL

I64 = ir.IntType(64)
ELEMENTS = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
KERNEL_NAMES = ("scriptc_winograd_input", "scriptc_winograd_output")
# G of F(2x2, 3x3): U = G g G^T.
WEIGHT_TRANSFORM = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])


def takes(kernel: tuple, geometry, output: tuple, channels: tuple, dtype: str) -> bool:
    """Whether a convolution multiplies by F(2x2, 3x3): 3x3, stride 1, padding 1, no dilation, an
    even output height, output rows of a whole number of vectors of tiles (2 * lanes outputs), and
    `channels` (in, out) at least 16 and 32. Measured over 4 images of 64x64 at one thread, its time
    over the tap products': in x out 16x16 1.18, 32x16 1.09, 64x16 0.98, 16x32 0.96, 32x32 0.90,
    16x64 0.85, 64x32 0.77, 32x64 0.71, and 64x64 0.69 at 32x32 (the 16 products' GEMMs of 16 rows
    run far below the tap GEMM's rate)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    width = 2 * lanes(ELEMENTS[dtype])
    return tuple(kernel) == (3, 3) and (sh, sw, ph, pw, dh, dw) == (1, 1, 1, 1, 1, 1) and oh % 2 == 0 and \
        ow % width == 0 and channels[0] >= 16 and channels[1] >= 32


def weights(weight: np.ndarray) -> np.ndarray:
    """U (16, O, C) of weights (O, C, 3, 3): U[4 * i + j] = (G g G^T)[i, j], in the weights' dtype."""
    transformed = np.einsum("ik,ockl,jl->ijoc", WEIGHT_TRANSFORM, weight.astype(np.float64), WEIGHT_TRANSFORM)
    return np.ascontiguousarray(transformed.reshape(16, *weight.shape[:2]).astype(weight.dtype))


def functions(dtype: str) -> tuple[int, int]:
    """The addresses of the input and output transforms for a dtype name, compiled once per machine."""
    from .build import compiled

    names = [f"{name}_{'f64' if dtype == 'float64' else 'f32'}" for name in KERNEL_NAMES]
    sources = ("native/winograd", "native/gemm", "native/loops", "native/threads", "codegen/llvm/loop")
    found = compiled(f"winograd|{dtype}", sources, functools.partial(_module, element=ELEMENTS[dtype], names=names),
                     names)
    return found[names[0]], found[names[1]]


def _module(triple: str, element, names) -> ir.Module:
    m = ir.Module(name=names[0])
    m.triple = triple
    for name, build in zip(names, (_build_input, _build_output)):
        fn = ir.Function(m, KERNEL, name=name)
        build(ir.IRBuilder(fn.append_basic_block("entry")), fn.args, element)
    return m


def _frame(b: ir.IRBuilder, args, element, pointers: int, words: int):
    """(start, end, the pointers, the words, the vector type, const) of a transform's arguments."""
    start, end, ptrs, meta = args

    def const(value):
        return ir.Constant(I64, value)
    found = [b.bitcast(b.load(b.gep(ptrs, [const(k)])), element.as_pointer()) for k in range(pointers)]
    return start, end, found, [b.load(b.gep(meta, [const(k)])) for k in range(words)], \
        ir.VectorType(element, lanes(element)), const


def _vector_at(b: ir.IRBuilder, vector, pointer):
    """`pointer` (to an element) as a pointer to an unaligned vector."""
    return b.bitcast(pointer, vector.as_pointer())


def _element_align(vector) -> int:
    return 8 if vector.element == ir.DoubleType() else 4


def _split(b: ir.IRBuilder, vector, pointer, count: int):
    """The even and odd elements of the 2 * count from `pointer` (two unaligned loads)."""
    first = b.load(_vector_at(b, vector, pointer), align=_element_align(vector))
    second = b.load(_vector_at(b, vector, b.gep(pointer, [ir.Constant(I64, count)])), align=_element_align(vector))
    mask = ir.VectorType(ir.IntType(32), count)
    return (b.shuffle_vector(first, second, ir.Constant(mask, list(range(0, 2 * count, 2)))),
            b.shuffle_vector(first, second, ir.Constant(mask, list(range(1, 2 * count, 2)))))


def _build_input(b: ir.IRBuilder, args, element) -> None:
    start, end, (image, transformed), (channels, plane, wq, tw, rows, tiles), vector, const = \
        _frame(b, args, element, 2, 6)
    count = vector.count

    def row(q):
        channel, tile_row = b.sdiv(q, rows), b.srem(q, rows)
        first = b.gep(image, [b.add(b.mul(channel, plane), b.mul(b.mul(tile_row, const(2)), wq))])
        stored = b.add(b.mul(channel, tiles), b.mul(tile_row, tw))

        def tiles_from(tx):
            t = []
            for i in range(4):
                at = b.gep(first, [b.add(b.mul(const(i), wq), b.mul(tx, const(2)))])
                d0, d1 = _split(b, vector, at, count)
                d2, d3 = _split(b, vector, b.gep(at, [const(2)]), count)
                t.append((b.fsub(d0, d2), b.fadd(d1, d2), b.fsub(d2, d1), b.fsub(d1, d3)))
            for j in range(4):
                values = (b.fsub(t[0][j], t[2][j]), b.fadd(t[1][j], t[2][j]), b.fsub(t[2][j], t[1][j]),
                          b.fsub(t[1][j], t[3][j]))
                for i, value in enumerate(values):
                    position = b.add(b.mul(const(4 * i + j), b.mul(channels, tiles)), b.add(stored, tx))
                    b.store(value, _vector_at(b, vector, b.gep(transformed, [position])), align=_element_align(vector))
        loop(b, const(0), tw, tiles_from, "tiles", step=count)
    loop(b, start, end, row, "rows")
    b.ret_void()


def bounded_value(b: ir.IRBuilder, value, floored, leaky, bounds: tuple):
    """`value` through an epilogue (heads.epilogue): at least the floor and at most the ceiling where
    `floored` (a NaN stays NaN), where(value > 0, value, value * slope) where `leaky`; `bounds`:
    (floor, ceiling, slope, zeros) as gemm.epilogue_values gives them."""
    floor_value, ceiling_value, slope_value, zeros = bounds
    at_least = b.select(b.fcmp_unordered(">", value, floor_value), value, floor_value)
    clamped = b.select(b.fcmp_ordered(">", at_least, ceiling_value), ceiling_value, at_least)
    sloped = b.select(b.fcmp_ordered(">", value, zeros), value, b.fmul(value, slope_value))
    return b.select(floored, clamped, b.select(leaky, sloped, value))


def _build_output(b: ir.IRBuilder, args, element) -> None:
    start, end, (products, out, bias, bounds), (outputs, tiles, tw, rows, out_plane, out_row, mode, bias_step,
                                                zero_after), vector, const = _frame(b, args, element, 4, 9)
    count, align = vector.count, _element_align(vector)
    floor_value, ceiling_value, leaky, slope_value, zeros = epilogue_values(b, bounds, mode, element, vector)
    floored = b.and_(b.icmp_signed("!=", mode, const(0)), b.not_(leaky))
    half = ir.VectorType(ir.IntType(32), count)
    low = ir.Constant(half, [k // 2 + (count if k % 2 else 0) for k in range(count)])
    high = ir.Constant(half, [count // 2 + k // 2 + (count if k % 2 else 0) for k in range(count)])

    def bounded(value):
        return bounded_value(b, value, floored, leaky, (floor_value, ceiling_value, slope_value, zeros))

    def row(q):
        channel, tile_row = b.sdiv(q, rows), b.srem(q, rows)
        shift = splat(b, b.load(b.gep(bias, [b.mul(channel, bias_step)])), vector)
        first = b.gep(out, [b.add(b.mul(channel, out_plane), b.mul(b.mul(tile_row, const(2)), out_row))])
        second = b.gep(first, [out_row])
        with b.if_then(b.icmp_signed("!=", zero_after, const(0))):
            for target in (first, second):
                b.store(ir.Constant(element, 0.0), b.gep(target, [b.mul(tw, const(2))]))
        read = b.add(b.mul(channel, tiles), b.mul(tile_row, tw))

        def tiles_from(tx):
            m = [[b.load(_vector_at(b, vector, b.gep(products, [b.add(b.mul(const(4 * i + j), b.mul(outputs, tiles)),
                                                                         b.add(read, tx))])), align=align)
                  for j in range(4)] for i in range(4)]
            s = ([b.fadd(b.fadd(m[0][j], m[1][j]), m[2][j]) for j in range(4)],
                 [b.fsub(b.fsub(m[1][j], m[2][j]), m[3][j]) for j in range(4)])
            for target, (s0, s1, s2, s3) in zip((first, second), s):
                left = bounded(b.fadd(b.fadd(b.fadd(s0, s1), s2), shift))
                right = bounded(b.fadd(b.fsub(b.fsub(s1, s2), s3), shift))
                at = b.gep(target, [b.mul(tx, const(2))])
                for k, order in enumerate((low, high)):
                    b.store(b.shuffle_vector(left, right, order), _vector_at(b, vector, b.gep(at, [const(k * count)])),
                            align=align)
        loop(b, const(0), tw, tiles_from, "tiles", step=count)
    loop(b, start, end, row, "rows")
    b.ret_void()
