"""The transforms of a 4x4 stride-2 convolution (padding 1) by Winograd's F(2x2, 2x2) over its phases.

Split by the stride's phases (tap_products.tap_plan: phase (a, b) of the padded image holds its rows
a, a + 2, ... and columns b, b + 2, ...), such a convolution is a 2x2 stride-1 convolution of 4C
channels (c, a, b): output (oy, ox) sums phase (c, a, b)'s values at (oy + qy, ox + qx) times weight
(o, c, 2 qy + a, 2 qx + b). F(2x2, 2x2) computes a tile of 2x2 outputs from the 3x3 tile d of each
phase channel around it in 9 multiplies where the direct sums take 16: V = B^T d B, U = G g G^T
(weights(), once, when the program is built), M the sum over phase channels of U * V element by
element - 9 GEMMs (O x 4C by 4C x tiles), one per position of the 3x3 tile - and Y = A^T M A, with
B^T = [[1, -1, 0], [0, 1, 0], [0, -1, 1]], G = [[1, 0], [1, 1], [0, 1]], A^T = [[1, 1, 0], [0, 1, 1]]:
every coefficient 0 or +-1, so the results differ from the direct sums only by the reordered sums'
rounding, as a GEMM's blocking would. A NaN reaches the outputs whose window holds it; an infinite
input can give NaN where the direct sums give +-inf (the transforms subtract it from itself).

The tiles of several images go side by side (the GEMMs' columns), in any number per image: a vector
holds 16 (8 for float64) consecutive tiles, whatever rows or images they come from, read by gathers
through a table of where each tile starts and stored by scatters through another. A row of a tile's
first two values comes as one 64-bit element in float32 (_Vectors.pair): DCGAN D's input transforms
0.58, 0.34, 0.22 ms a call with 9 gathers of 32 bits, 0.41, 0.25, 0.15 so.

`scriptc_winograd_phases_input_f32` / `_f64` (functions()) have the kernel signature (start, end,
ptrs, meta): channels [start, end) of the 4C phase channels, ptrs = [the phases, V, table]; the
phases of one image after another, each channel's plane PLANE elements, rows WQ apart; V (9, 4C,
ROW), tile n of V's rows at column n; the table (int64, ROW of them, a multiple of the lanes) where
in a channel's plane (from the first image's) tile n's top-left value is - any place in the phases
for the columns past the last tile; meta = [4C, PLANE, WQ, ROW].

`scriptc_winograd_phases_output_f32` / `_f64`: output channels [start, end) of O, ptrs = [M (9, O,
ROW), out, bias, bounds, table]: the table where in an output channel's plane (from the first image's)
tile n's top-left output goes, the planes OUT_PLANE apart, the tile's rows OUT_ROW apart and its
columns OUT_COLUMN; meta = [O, ROW, TILES (the columns that are tiles), OUT_PLANE, OUT_ROW,
OUT_COLUMN, mode] (the epilogue as gemm.py's: heads.epilogue; the bias one value per output channel).

A 4x4 stride-2 transposed convolution (padding 1) is four such 2x2 products of its padded input, one
per phase of its output (transposed_weights()): output phase (a, b) at (m, n) sums the padded
input's values at (m + a + qy, n + b + qx) times weight (c, o, 3 - a - 2 qy, 3 - b - 2 qx) - each
written to every other row and column of the output (OUT_COLUMN 2).
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .gemm import epilogue_values, lanes
from .loops import loop_arguments, splat
from .winograd import bounded_value

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
ELEMENTS = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
KERNEL_NAMES = ("scriptc_winograd_phases_input", "scriptc_winograd_phases_output")
# G of F(2x2, 2x2): U = G g G^T.
WEIGHT_TRANSFORM = np.array([[1, 0], [1, 1], [0, 1]])
# Phase channels and output channels at least these: below them the transforms cost more than the
# multiplies they save. Measured over 16 images at one thread, this way's time over the tap products':
# in -> out channels on 32x32 16 -> 32 1.30, 32 -> 32 1.28, 32 -> 64 1.05, 64 -> 64 0.99, 64 -> 128
# 0.87; 64 -> 32 on 16x16 0.90 (DCGAN D's first layer: 12 phase channels).
MIN_CHANNELS = (256, 32)


def takes(kernel: tuple, geometry, image: tuple, channels: tuple, dtype: str) -> bool:
    """Whether a convolution multiplies by F(2x2, 2x2) over its phases: 4x4, stride 2, padding 1, no
    dilation, an image of even height and width whose output has an even height and width, a float
    dtype, and `channels` (in, out) enough (MIN_CHANNELS, the input's counted as its 4C phase
    channels)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    return tuple(kernel) == (4, 4) and (sh, sw, ph, pw, dh, dw) == (2, 2, 1, 1, 1, 1) and dtype in ELEMENTS and \
        image[0] % 2 == image[1] % 2 == 0 and oh % 2 == ow % 2 == 0 and 4 * channels[0] >= MIN_CHANNELS[0] and \
        channels[1] >= MIN_CHANNELS[1]


def weights(weight: np.ndarray) -> np.ndarray:
    """U (9, O, 4C) of weights (O, C, 4, 4): U[3 * i + j][o, 4 c + 2 a + b] = (G g G^T)[i, j] of the
    2x2 g[qy, qx] = weight[o, c, 2 qy + a, 2 qx + b], made in float64 and rounded once."""
    o, c = weight.shape[:2]
    phased = weight.astype(np.float64).reshape(o, c, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(o, 4 * c, 2, 2)
    transformed = np.einsum("ik,onkl,jl->ijon", WEIGHT_TRANSFORM, phased, WEIGHT_TRANSFORM)
    return np.ascontiguousarray(transformed.reshape(9, o, 4 * c).astype(weight.dtype))


def transposed_weights(weight: np.ndarray) -> np.ndarray:
    """U (4, 9, O, C) of a transposed convolution's weights (C, O, 4, 4): for output phase (a, b),
    weights()'s U of the 2x2 g[qy, qx] = weight[c, o, 3 - a - 2 qy, 3 - b - 2 qx]."""
    c, o = weight.shape[:2]
    flipped = weight.astype(np.float64)[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)  # (O, C, 4, 4): taps 3 - k
    phases = [flipped[:, :, a::2, b::2] for a in range(2) for b in range(2)]
    transformed = [np.einsum("ik,ockl,jl->ijoc", WEIGHT_TRANSFORM, g, WEIGHT_TRANSFORM).reshape(9, o, c)
                   for g in phases]
    return np.ascontiguousarray(np.stack(transformed).astype(weight.dtype))


def functions(dtype: str) -> tuple[int, int]:
    """The addresses of the input and output transforms for a dtype name, compiled once per machine."""
    from .build import compiled

    names = [f"{name}_{'f64' if dtype == 'float64' else 'f32'}" for name in KERNEL_NAMES]
    sources = ("native/winograd_phases", "native/winograd", "native/gemm", "native/loops", "native/threads",
               "codegen/llvm/loop")
    found = compiled(f"winograd_phases|{dtype}", sources,
                     functools.partial(_module, element=ELEMENTS[dtype], names=names), names)
    return found[names[0]], found[names[1]]


def vector_tiles(dtype: str) -> int:
    """The tiles one vector holds (the transforms' tables and V's rows are whole vectors of them)."""
    return lanes(ELEMENTS[dtype])


def _module(triple: str, element, names) -> ir.Module:
    m = ir.Module(name=names[0])
    m.triple = triple
    kernel = ir.FunctionType(ir.VoidType(), [I64, I64, ir.IntType(8).as_pointer().as_pointer(), I64.as_pointer()])
    for name, build in zip(names, (_build_input, _build_output)):
        fn = ir.Function(m, kernel, name=name)
        build(ir.IRBuilder(fn.append_basic_block("entry")), fn.args, element)
    return m


def _intrinsic(module: ir.Module, signature: ir.FunctionType, name: str) -> ir.Function:
    """The declaration of intrinsic `name` in `module` (made the first time a function asks for it)."""
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, signature, name)


class _Vectors:
    """The vector types of a transform and its gather, scatter and address arithmetic."""

    def __init__(self, b: ir.IRBuilder, element):
        self.b, self.element = b, element
        self.count = lanes(element)
        self.vector = ir.VectorType(element, self.count)
        self.indices = ir.VectorType(I64, self.count)
        self.masks = ir.VectorType(I1, self.count)
        self.pointers = ir.VectorType(element.as_pointer(), self.count)
        self.itemsize = 8 if element == ir.DoubleType() else 4
        self.align = ir.Constant(I32, self.itemsize)
        suffix = f"v{self.count}{'f64' if element == ir.DoubleType() else 'f32'}"
        self._gather = _intrinsic(b.module, ir.FunctionType(self.vector, [self.pointers, I32, self.masks,
                                                                          self.vector]),
                                  f"llvm.masked.gather.{suffix}.v{self.count}p0")
        self._scatter = _intrinsic(b.module, ir.FunctionType(ir.VoidType(), [self.vector, self.pointers, I32,
                                                                             self.masks]),
                                   f"llvm.masked.scatter.{suffix}.v{self.count}p0")
        self.every = ir.Constant(self.masks, [1] * self.count)
        self.lane = ir.Constant(self.indices, list(range(self.count)))

    def const(self, value):
        return ir.Constant(I64, value)

    def addresses(self, base, table, at):
        """The addresses base + table[at : at + lanes] elements (a vector of i64)."""
        b = self.b
        offsets = b.load(b.bitcast(b.gep(table, [at]), self.indices.as_pointer()), align=8)
        scaled = b.mul(offsets, splat(b, self.const(self.itemsize), self.indices))
        return b.add(splat(b, b.ptrtoint(base, I64), self.indices), scaled)

    def shifted(self, addresses, elements):
        """`addresses` moved by a number of elements (an i64 value)."""
        b = self.b
        return b.add(addresses, splat(b, b.mul(elements, self.const(self.itemsize)), self.indices))

    def gather(self, addresses):
        return self.b.call(self._gather, [self.b.inttoptr(addresses, self.pointers), self.align, self.every,
                                          ir.Constant(self.vector, ir.Undefined)])

    def pair(self, addresses):
        """The values at `addresses` and the ones after them: for float32 one 64-bit gather per half
        of the lanes, split into the two by even and odd elements (a third fewer elements gathered
        than two gathers of 32 bits); for float64 two gathers."""
        b = self.b
        if self.itemsize == 8:
            return self.gather(addresses), self.gather(self.shifted(addresses, self.const(1)))
        half = self.count // 2
        words = ir.VectorType(I64, half)
        gather = _intrinsic(b.module, ir.FunctionType(words, [ir.VectorType(I64.as_pointer(), half), I32,
                                                              ir.VectorType(I1, half), words]),
                            f"llvm.masked.gather.v{half}i64.v{half}p0")
        indices = ir.VectorType(I32, half)
        halves = []
        for k in range(2):
            part = b.shuffle_vector(addresses, addresses, ir.Constant(indices, list(range(k * half, (k + 1) * half))))
            found = b.call(gather, [b.inttoptr(part, ir.VectorType(I64.as_pointer(), half)), self.align,
                                    ir.Constant(ir.VectorType(I1, half), [1] * half), ir.Constant(words, ir.Undefined)])
            halves.append(b.bitcast(found, self.vector))
        lanes = ir.VectorType(I32, self.count)
        return tuple(b.shuffle_vector(halves[0], halves[1], ir.Constant(lanes, list(range(parity, 2 * self.count, 2))))
                     for parity in (0, 1))

    def scatter(self, value, addresses, mask):
        self.b.call(self._scatter, [value, self.b.inttoptr(addresses, self.pointers), self.align, mask])

    def at(self, pointer):
        return self.b.bitcast(pointer, self.vector.as_pointer())


def _build_input(b: ir.IRBuilder, args, element) -> None:
    start, end, (phases, transformed, table), (channels, plane, wq, row) = loop_arguments(b, args, element, 3, 4)
    table = b.bitcast(table, I64.as_pointer())
    v = _Vectors(b, element)
    position_step = b.mul(channels, row)

    def channel(c):
        base = b.gep(phases, [b.mul(c, plane)])
        stored = b.gep(transformed, [b.mul(c, row)])

        def tiles_from(n):
            first = v.addresses(base, table, n)
            d = []
            for i in range(3):
                line = v.shifted(first, b.mul(v.const(i), wq))
                d.append((*v.pair(line), v.gather(v.shifted(line, v.const(2)))))
            # B^T d: rows (d0 - d1, d1, d2 - d1); then the same on the columns
            rows = ([b.fsub(d[0][j], d[1][j]) for j in range(3)], d[1], [b.fsub(d[2][j], d[1][j]) for j in range(3)])
            for i, r in enumerate(rows):
                for j, value in enumerate((b.fsub(r[0], r[1]), r[1], b.fsub(r[2], r[1]))):
                    target = b.gep(stored, [b.add(b.mul(v.const(3 * i + j), position_step), n)])
                    b.store(value, v.at(target), align=v.itemsize)
        loop(b, v.const(0), row, tiles_from, "tiles", step=v.count)
    loop(b, start, end, channel, "channels")
    b.ret_void()


def _build_output(b: ir.IRBuilder, args, element) -> None:
    start, end, (products, out, bias, bounds, table), (outputs, row, tiles, out_plane, out_row, out_column, mode) = \
        loop_arguments(b, args, element, 5, 7)
    table = b.bitcast(table, I64.as_pointer())
    v = _Vectors(b, element)
    floor_value, ceiling_value, leaky, slope_value, zeros = epilogue_values(b, bounds, mode, element, v.vector)
    floored = b.and_(b.icmp_signed("!=", mode, v.const(0)), b.not_(leaky))
    position_step = b.mul(outputs, row)

    def channel(o):
        shift = splat(b, b.load(b.gep(bias, [o])), v.vector)
        base = b.gep(out, [b.mul(o, out_plane)])
        read = b.gep(products, [b.mul(o, row)])

        def tiles_from(n):
            m = [[b.load(v.at(b.gep(read, [b.add(b.mul(v.const(3 * i + j), position_step), n)])), align=v.itemsize)
                  for j in range(3)] for i in range(3)]
            inside = b.icmp_signed("<", b.add(splat(b, n, v.indices), v.lane), splat(b, tiles, v.indices))
            first = v.addresses(base, table, n)
            # A^T M: rows (m0 + m1, m1 + m2); then the same on the columns
            for i, r in enumerate(([b.fadd(m[0][j], m[1][j]) for j in range(3)],
                                   [b.fadd(m[1][j], m[2][j]) for j in range(3)])):
                for j, value in enumerate((b.fadd(r[0], r[1]), b.fadd(r[1], r[2]))):
                    value = bounded_value(b, b.fadd(value, shift), floored, leaky,
                                          (floor_value, ceiling_value, slope_value, zeros))
                    v.scatter(value, v.shifted(first, b.add(b.mul(v.const(i), out_row), b.mul(v.const(j), out_column))),
                              inside)
        loop(b, v.const(0), tiles, tiles_from, "tiles", step=v.count)
    loop(b, start, end, channel, "channels")
    b.ret_void()
