"""A 3x3 stride-1 convolution's products by Winograd's F(2x2, 3x3) (native/winograd.py), in a segment
program: the tap products' phase (tap_products.tap_products) is its padded image, and
per image and band of tile rows the input transform, the 16 GEMMs of the transformed weights by it
(the GEMM loop of the heads) and the output transform, which adds the bias, applies the epilogue
and stores the output's rows.

2.25x fewer multiplies than the tap products (which convolutions gain: winograd.takes): super-res
(4x1x64x64: 64 -> 64 and 64 -> 32 layers) 13.5 -> 9.8 ms at one thread, 0.83 -> 0.58x torch.jit's
time. A band's V and M (16 x channels x its tiles) stay about BAND_BYTES each, in L2 between the
transforms and the GEMMs: bands of 4 tile rows (512 KB for 64 channels) ran 64 -> 64 on 64x64 in
1.35 ms, the whole image at once (4 MB each, out to L3 and back) in 1.5.
"""

from __future__ import annotations

import numpy as np

from scriptc.native import gemm, positions, winograd
from scriptc.native.heads import GEMM_SPLIT_MIN
from scriptc.native.loops import loop_function

from .groups import PARALLEL_MIN_ELEMENTS
from .program_values import Builder

BAND_BYTES = 512 << 10
# multiply-adds over the elements a SPLIT's work counts (as the tap products')
_WORK_SCALE = max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)


def band_rows(tile_rows: int, tile_columns: int, channels: int, itemsize: int) -> int:
    """The tile rows of a band: the most that divide `tile_rows` and keep its 16 x `channels` x
    tiles under BAND_BYTES (one at least), so that every band has the same size."""
    row_bytes = 16 * channels * tile_columns * itemsize
    return max([r for r in range(1, tile_rows + 1) if tile_rows % r == 0 and r * row_bytes <= BAND_BYTES],
               default=1)


class WinogradProducts:
    """The records of one convolution's F(2x2, 3x3) products: the scratch, the transformed weights
    and the 16 GEMMs' arguments made once (before the image loop), then image() per image."""

    def __init__(self, builder: Builder, weight: np.ndarray, x_dtype, output: tuple, phase: tuple,
                 bias_pointer: int, has_bias: bool, bounds_pointer: int, mode: int):
        const = builder.const
        o, c = weight.shape[:2]
        (oh, ow), (self.plane, self.wq) = output, phase
        self.builder, self.itemsize, self.dtype = builder, x_dtype.itemsize, x_dtype.name
        self.tile_columns = ow // 2
        self.rows = band_rows(oh // 2, self.tile_columns, max(o, c), self.itemsize)
        self.bands = oh // 2 // self.rows
        tiles = self.rows * self.tile_columns
        self.channels, self.outputs, self.tiles = c, o, tiles
        self.inputs = builder.alloc(x_dtype, [const(16 * c * tiles)])
        self.products = builder.alloc(x_dtype, [const(16 * o * tiles)])
        transformed = builder.address_of(winograd.weights(weight))
        zero_bias, no_bounds = builder.address_of(np.zeros(max(o, 1), x_dtype)), builder.address_of(
            np.zeros(3, x_dtype))
        vectors = const(-(-tiles // gemm.vector_columns(self.dtype)))
        self.gemms = position_products(builder, self.dtype, 16, vectors,
                                       [transformed, self.inputs.pointer, self.products.pointer, zero_bias, no_bounds],
                                       [o * c, c * tiles, o * tiles], [const(v) for v in (o, c, tiles, 0, 0, tiles, tiles)],
                                       const(max(1, 16 * o * c * tiles // _WORK_SCALE)))
        self.epilogue = (bias_pointer, bounds_pointer, mode, 1 if has_bias else 0)

    def image(self, phase_image: int, out_image: int, out_plane: int, out_row: int, zero_after: bool) -> None:
        """Records multiplying one image: its padded planes from register phase_image (the phase's
        layout), its output from register out_image, planes out_plane and rows out_row elements
        apart; zero_after: each row's element after its last zeroed (padded planes' padding)."""
        builder, const = self.builder, self.builder.const
        compute, itemsize = builder.compute, self.itemsize
        transform_in, transform_out = winograd.functions(self.dtype)
        c, o, tiles = self.channels, self.outputs, self.tiles
        bias_pointer, bounds_pointer, mode, bias_step = self.epilogue
        in_meta, out_meta = builder.block(6), builder.block(9)
        builder.template[in_meta:in_meta + 6] = [c, self.plane, self.wq, self.tile_columns, self.rows, tiles]
        builder.template[out_meta:out_meta + 9] = [o, tiles, self.tile_columns, self.rows, out_plane, out_row, mode,
                                                   bias_step, int(zero_after)]
        for band in range(self.bands):
            source, target = builder.register(), builder.register()
            compute.append(("ADDR", source, phase_image, const(band * self.rows * 2 * self.wq), itemsize))
            compute.append(("ADDR", target, out_image, const(band * self.rows * 2 * out_row), itemsize))
            in_ptrs, out_ptrs = builder.block(2), builder.block(4)
            builder.copy_into(in_ptrs, [source, self.inputs.pointer], compute)
            compute.append(("SPLIT", const(transform_in), const(c * self.rows), in_ptrs, in_meta,
                            const(16 * c * tiles)))
            compute.append(self.gemms)
            builder.copy_into(out_ptrs, [self.products.pointer, target, bias_pointer, bounds_pointer], compute)
            compute.append(("SPLIT", const(transform_out), const(o * self.rows), out_ptrs, out_meta,
                            const(16 * o * tiles)))


def position_products(builder: Builder, dtype: str, count: int, vectors: int, pointers: list[int], steps: list[int],
                      words: list[int], work: int) -> tuple:
    """The record that runs `count` GEMMs of a Winograd transform's positions as one split
    (native/positions.py): `pointers` the registers of position 0's [a, b, out, bias, bounds],
    `steps` the elements from one position's a, b and out to the next's, `words` the registers of
    the GEMM loop's meta, `vectors` (a register) the vectors of each one's columns. Its registers
    are set where it is made (in phase two: `vectors` may be set there just before)."""
    compute, const = builder.compute, builder.const
    itemsize = np.dtype(dtype).itemsize
    ptrs, meta = builder.block(5), builder.block(positions.WORDS + len(words))
    builder.copy_into(ptrs, pointers, compute)
    builder.copy_into(meta, [const(loop_function("gemm", dtype)), const(count), vectors,
                             *(const(step * itemsize) for step in steps), *words], compute)
    total = builder.register()
    compute.append(("MUL", total, vectors, const(count)))
    return ("SPLIT", const(positions.function()), total, ptrs, meta, work)


def takes(weight_shape: tuple, geometry, dtype: str) -> bool:
    """Whether a convolution of these weights multiplies so (winograd.takes)."""
    o, c, kh, kw = weight_shape
    return winograd.takes((kh, kw), geometry, tuple(geometry[6:8]), (c, o), dtype)

