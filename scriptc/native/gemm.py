"""A matrix product for the executor's heads, as a native loop with 512-bit vectors.

numpy's OpenBLAS is often told which kernels to use (OPENBLAS_CORETYPE=Haswell here): on a CPU with
AVX-512 it then runs 256-bit kernels at half the machine's multiply-add rate - ~120 GFLOP/s a core
on this machine, where onnxruntime's MLAS runs the small CNN's convolutions at twice that. This loop
is the classic register-blocked GEMM: a tile of ROWS rows of the output by VECTORS vectors of
columns stays in registers while k runs through a slice of DEPTH_BLOCK values; each k loads the tile's row of b
(VECTORS vectors) once for all its rows and one element of a per row, broadcast. 8 rows by 3
vectors (24 of the 32 registers) measured best here: the CNN's conv2 products (64x288x1024) at
236 GFLOP/s a core in cache and 192 us an image from memory, against 194 and 250 for 8 by 2; the
MLP's the same (~240).

`scriptc_gemm_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): ptrs = [a (M, K),
b (K, N), out (M, N), bias (M,), floor (1,)], a contiguous, the rows of b and of out LDB and LDC
elements apart (N for contiguous ones; more for a band of a convolution's columns or output), out =
a @ b + bias[:, None] (a convolution's bias, one per output channel; zeros for a plain product),
then maximum(out, floor[0]) where meta[3] is 1 or 2 (a fused ReLU's 0; numpy's maximum, a NaN stays
NaN) and for 2 the minimum of that and floor[1] (a ReLU6's 6: floor then holds two values); for 3
where(out > 0, out, out * floor[2]) (a LeakyReLU's slope; heads.epilogue);
meta = [M, K, N, floored, bias step, LDB, LDC] (bias[row * step]: 1, or 0 for one value - a zero -
for every row). `scriptc_gemm_rows_f32` / `_f64` (rows_function) are the same loop with row k of b
at b + table[k] elements, ptrs[5] the table (int64, K of them; LDB then only says whether the rows
lie apart, for packing): a convolution's taps, each row a shifted view of its input (see
runtime/convolution_lowering.py). It keeps only some lanes of each vector of output columns, stored
one after another: ptrs[6] (int32, one per vector of columns) the bits of the lanes kept, ptrs[7]
(int64) where in its row of out the first goes - a convolution's rows of WQ outputs cut to OW as
they are stored; or, where its meta[7] is not 0, each vector whole (its columns before N) where
ptrs[7] says, the lanes not kept zeroed (runtime/padded_planes.py: rows of WQ that are the next
convolution's padded planes).
(The maximum costs a short product, K = 27, 10% where it runs: a flag, not a floor of -inf.) The range counts vectors of
columns of the output (the last one partial where N is not a multiple), so that threads split the
columns evenly; a range goes through them in panels of VECTORS vectors, its last vectors as one
narrower panel, and the columns that fill no vector as one masked vector (so a classifier's 10
columns run here too). Where there are more than ROWS rows, each slice of a panel's columns of b is
first copied into one contiguous pack that stays in L1 while every block of rows reads it (rows of b
2-4 KB apart share a few of L1's sets and evicted each other: 64x784x512 at 87-110 GFLOP/s a core
on this machine in place, 130 packed, torch's oneDNN ~150); the row-table loop's taps
read in place but for two slices' depth under many rows (see `spread` below). A product of one
block of rows reads b in place and asks for the next panel's part as it goes (its rows are a page
or more apart: too many streams for the hardware prefetcher).
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.driver import host_cpu
from scriptc.codegen.llvm.loop import loop
from scriptc.codegen.llvm.mathlib import CONTRACT

from .loops import loop_arguments, loop_module, multiply_add_rows, opaque
from .loops import splat as vector_splat

I64 = ir.IntType(64)
I32 = ir.IntType(32)
FUNCTIONS = {"float32": ("scriptc_gemm_f32", ir.FloatType()), "float64": ("scriptc_gemm_f64", ir.DoubleType())}
NARROW_FUNCTIONS = {"float32": ("scriptc_gemm_narrow_f32", ir.FloatType()),
                    "float64": ("scriptc_gemm_narrow_f64", ir.DoubleType())}
# The narrow product (_build_narrow): b's columns a tile takes at most, the accumulators a tile
# holds (of the 32 vector registers) and the vectors of rows at most.
NARROW_MAX_COLUMNS = 18
NARROW_TILE = 24
NARROW_MAX_BLOCKS = 6
# How many values of k ahead the narrow product asks for its packed weights (a cache line each).
NARROW_AHEAD = 24
ROW_TABLE_FUNCTIONS = {"float32": ("scriptc_gemm_rows_f32", ir.FloatType()),
                       "float64": ("scriptc_gemm_rows_f64", ir.DoubleType())}
VECTOR_BYTES = 64
ROWS = 8
VECTORS = 3
# The heights of the tiles that take the rows left after the blocks of ROWS, least first: a tile costs
# about its height (a layer of 9 or 20 output rows ran 16 or 24).
TAIL_HEIGHTS = (2, 4, ROWS)
# The values of k a tile runs through at a time: a panel's rows of b for them (144 x 3 vectors, 27 KB)
# stay in L1 while every block of rows goes by; the tiles of the next slice add to what the last
# stored.
DEPTH_BLOCK = 144
# The most bytes of a for which the products go slice by slice (over_rows); and of an a of at most
# FEW_BLOCKS blocks of rows.
PACKED_A_BYTES = 256 << 10
FEW_BLOCKS = 2
FEW_BLOCKS_A_BYTES = 1 << 20
# Rows of b this many bytes apart or more are packed in the plain loop (over_rows), whatever a's size.
FAR_ROW_BYTES = 1 << 10
# The deepest product that goes block of rows by block of rows across the panels (where it reads b in place).
SHALLOW_DEPTH = 256
# The row-table loop packs its taps slice by slice (over_rows) for depths in (lowest, highest] - two
# slices of DEPTH_BLOCK, the second at least half full - under this many rows or more of a.
TAPS_PACKED_DEPTHS = (DEPTH_BLOCK * 3 // 2, 2 * DEPTH_BLOCK)
TAPS_PACKED_ROWS = 64
# CPUs (LLVM's names) on which the row-table loop reads its taps in place at every depth: on AMD's
# Zen 5 the small CNN's conv2 (64 x 288 by 288 x 1024) and mnist's (64 x 288 by 288 x 576) ran 11%
# faster in place than packed (171 -> 152 us, 98 -> 88 us: at ~255 GFLOP/s a core, its FMA peak).
TAPS_IN_PLACE_CPUS = frozenset({"znver5"})


def packs_taps(cpu: str) -> bool:
    """Whether the row-table loop built for the CPU LLVM names `cpu` packs two slices of taps under
    many rows (TAPS_PACKED_DEPTHS, TAPS_PACKED_ROWS) rather than reading them in place."""
    return cpu not in TAPS_IN_PLACE_CPUS


def lanes(element: ir.Type) -> int:
    return VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)


def vector_columns(dtype: str) -> int:
    """The output columns one index of the loop's range covers."""
    return lanes(FUNCTIONS[dtype][1])


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def rows_function(dtype: str) -> int:
    """The address of the loop whose rows of b lie where a table says (ROW_TABLE_FUNCTIONS), for a
    dtype name, compiled once per machine."""
    from .build import compiled

    name, element = ROW_TABLE_FUNCTIONS[dtype]
    sources = ("native/gemm", "native/loops", "native/threads", "codegen/llvm/loop")
    return compiled(f"gemm-rows|{dtype}", sources,
                    lambda triple: loop_module(triple, name, element, functools.partial(_build, row_table=True)),
                    [name])[name]


def _build(b: ir.IRBuilder, args, element, row_table: bool = False) -> None:

    start, end, (a, matrix, out, bias, floor), (rows, depth, width, floored, bias_step, b_step, out_step) = \
        loop_arguments(b, args, element, 5, 7)
    if row_table:
        table, kept_lanes, kept_at = (b.bitcast(b.load(b.gep(args[2], [ir.Constant(I64, k)])), kind.as_pointer())
                                      for k, kind in ((5, I64), (6, I32), (7, I64)))
        whole_rows = b.icmp_signed("!=", b.load(b.gep(args[3], [ir.Constant(I64, 7)])), ir.Constant(I64, 0))

    def row_of_b(k):
        """Where row k of b starts, in elements from b."""
        return b.load(b.gep(table, [k])) if row_table else b.mul(k, b_step)

    def const(value):
        return ir.Constant(I64, value)
    width_lanes = lanes(element)
    element_bytes = align = VECTOR_BYTES // width_lanes
    panel_bytes = VECTOR_BYTES * VECTORS
    address_type = ir.PointerType(ir.IntType(8))
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, I32, I32, I32]))

    splat = functools.partial(vector_splat, b)

    vector = ir.VectorType(element, width_lanes)
    suffix = f"v{width_lanes}{'f64' if element == ir.DoubleType() else 'f32'}.p0"
    mask_type = ir.VectorType(ir.IntType(1), width_lanes)
    masked_load = ir.Function(b.module, ir.FunctionType(vector, [vector.as_pointer(), I32, mask_type, vector]),
                              f"llvm.masked.load.{suffix}")
    masked_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), I32, mask_type]),
                               f"llvm.masked.store.{suffix}")
    zeros = ir.Constant(vector, [0.0] * width_lanes)
    compress_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, element.as_pointer(), mask_type]),
                                 f"llvm.masked.compressstore.{suffix.removesuffix('.p0')}")
    expand_load = ir.Function(b.module, ir.FunctionType(vector, [element.as_pointer(), mask_type, vector]),
                              f"llvm.masked.expandload.{suffix.removesuffix('.p0')}")
    floor_value, ceiling_value, leaky, slope_value, positive = epilogue_values(b, floor, floored, element, vector)

    def at_least(value):
        """maximum(value, floor) as numpy's (a NaN stays NaN): a compare and a blend, where
        llvm.maximum (which also orders -0 below +0) costs five instructions a vector."""
        return b.select(b.fcmp_unordered(">", value, floor_value), value, floor_value)
    # The accumulators live in stack slots that LLVM promotes to registers (the loops' phis).
    slots = [[b.alloca(vector) for _ in range(VECTORS)] for _ in range(ROWS)]
    # A panel's slice of b, copied whole (packed.__doc__).
    pack = b.alloca(vector, size=const(DEPTH_BLOCK * VECTORS))
    pack.align = VECTOR_BYTES

    def load(pointer, mask):
        pointer = b.bitcast(pointer, vector.as_pointer())
        if mask is None:
            return b.load(pointer, align=align)
        return b.call(masked_load, [pointer, ir.Constant(I32, align), mask, zeros])

    def store(value, pointer, mask):
        pointer = b.bitcast(pointer, vector.as_pointer())
        if mask is None:
            b.store(value, pointer, align=align)
        else:
            b.call(masked_store, [value, pointer, ir.Constant(I32, align), mask])

    def tile(first_row, column, vectors: int, k_first, k_end, ahead: bool = False, mask=None, packed=None,
             height: int = ROWS):
        """out[first_row : first_row + height, column : column + vectors vectors] += the part of a @ b
        over k in [k_first, k_end) - from the bias there (the bias a column, one value per row) for
        the first part, floored where asked after the last; `ahead`: and ask for the next panel's
        part of b; `mask`: the lanes of a last, partial vector; `packed`: b's part is in the pack
        (packed()), whole vectors. Rows past the last are the last row again: their stores write what
        its own wrote."""
        acc = [row[:vectors] for row in slots[:height]]
        last = b.sub(rows, const(1))
        row_at = [b.select(b.icmp_signed("<", b.add(first_row, const(r)), rows), b.add(first_row, const(r)), last)
                  for r in range(height)]
        if row_table:  # each vector's kept lanes, stored one after another from where the table says
            rows_out = [b.gep(out, [b.mul(at, out_step)]) for at in row_at]
            vector_at = [b.add(b.sdiv(column, const(width_lanes)), const(v)) for v in range(vectors)]
            bits = [b.trunc(b.load(b.gep(kept_lanes, [q])), ir.IntType(width_lanes)) for q in vector_at]
            kept = [b.bitcast(word, mask_type) for word in bits]
            # (most vectors keep every lane: a plain store, where a compress store to memory costs
            # several - on Intel cores, a microcoded sequence)
            whole = [b.icmp_signed("==", word, ir.Constant(word.type, -1)) for word in bits]
            kept_from = [b.load(b.gep(kept_at, [q])) for q in vector_at]

            # whole rows: every vector whole where the table says, the lanes not kept zeroed, none
            # past the last column (padded_planes.py)
            lanes_at = ir.Constant(ir.VectorType(I64, width_lanes), list(range(width_lanes)))
            inside = [b.icmp_signed("<", b.add(splat(b.mul(q, const(width_lanes)), lanes_at.type), lanes_at),
                                    splat(width, lanes_at.type)) for q in vector_at]

            def read_out(r, v):
                place = b.gep(rows_out[r], [kept_from[v]])
                return b.select(whole_rows, load(place, inside[v]), b.call(expand_load, [place, kept[v], zeros]))

            def write_out(value, r, v):
                place = b.gep(rows_out[r], [kept_from[v]])
                with b.if_else(whole_rows) as (zeroed, kept_only):
                    with zeroed:
                        store(b.select(kept[v], value, zeros), place, inside[v])
                    with kept_only:
                        kept_lanes_of(value, place, v)

            def kept_lanes_of(value, place, v):
                with b.if_else(whole[v]) as (plain, cut):
                    with plain:
                        store(value, place, None)
                    with cut:
                        b.call(compress_store, [value, place, kept[v]])
        else:
            targets = [b.gep(out, [b.add(b.mul(at, out_step), column)]) for at in row_at]

            def read_out(r, v):
                return load(b.gep(targets[r], [const(v * width_lanes)]), mask)

            def write_out(value, r, v):
                store(value, b.gep(targets[r], [const(v * width_lanes)]), mask)
        with b.if_else(b.icmp_signed("==", k_first, const(0))) as (from_bias, from_out):
            with from_bias:
                for row, at in zip(acc, row_at):
                    start_value = splat(b.load(b.gep(bias, [b.mul(at, bias_step)])), vector)
                    for cell in row:
                        b.store(start_value, cell)
            with from_out:
                for r, row in enumerate(acc):
                    for v, cell in enumerate(row):
                        b.store(read_out(r, v), cell)
        a_rows = [opaque(b, b.gep(a, [b.mul(at, depth)])) for at in row_at]
        b_column = b.gep(matrix, [column])

        def step(k):
            if packed is not None:
                line = b.bitcast(b.gep(pack, [b.mul(b.sub(k, k_first), const(VECTORS))]), element.as_pointer())
                values = [load(b.gep(line, [const(v * width_lanes)]), None) for v in range(vectors)]
                multiply_add_rows(b, acc, a_rows[:height], k, values, vector)
                return
            line = b.gep(b_column, [row_of_b(k)])
            if ahead:
                # The next panel's part of this row of b, from memory: a row of b is a page or more
                # (a convolution's columns), too many streams for the hardware prefetcher to follow.
                # (The first block of rows asks; the others find the panel in cache.)
                for cache_line in range(panel_bytes // 64):
                    address = b.gep(line, [const((panel_bytes + 64 * cache_line) // element_bytes)])
                    b.call(prefetch, [b.bitcast(address, address_type), ir.Constant(I32, 0), ir.Constant(I32, 3),
                                      ir.Constant(I32, 1)])
            multiply_add_rows(b, acc, a_rows[:height], k,
                              [load(b.gep(line, [const(v * width_lanes)]), mask) for v in range(vectors)], vector)
        loop(b, k_first, k_end, step, "k")
        def store_tile(bounded):
            for r in range(height):
                for v in range(vectors):
                    write_out(bounded(b.load(acc[r][v])), r, v)

        def floor_and_ceiling(value):
            value = at_least(value)
            return b.select(b.fcmp_ordered(">", value, ceiling_value), ceiling_value, value)
        last = b.icmp_signed("==", k_end, depth)
        floor_now = b.and_(b.and_(b.icmp_signed("!=", floored, const(0)), b.not_(leaky)), last)
        with b.if_else(floor_now) as (with_floor, other):
            with with_floor:
                store_tile(floor_and_ceiling)
            with other:
                with b.if_else(b.and_(leaky, last)) as (sloped, plain):
                    with sloped:
                        store_tile(lambda value: b.select(b.fcmp_ordered(">", value, positive), value,
                                                          b.fmul(value, slope_value)))
                    with plain:
                        store_tile(lambda value: value)

    def packed(column, vectors: int, k_first, k_end, mask):
        """Copy b's rows [k_first, k_end) of the panel's `vectors` vectors from `column` into the
        pack, one after another (zeros in a partial vector's lanes past the end): the tiles of every
        block of rows read them from there, a stream L1 keeps. Read in place, a panel's rows are
        LDB apart - 2-4 KB for a layer of 512-1024 columns - and share a few of L1's sets: the
        rows of one slice evicted each other before the next block of rows came back to them."""
        def copy(k):
            line = b.gep(matrix, [b.add(row_of_b(k), column)])
            into = b.bitcast(b.gep(pack, [b.mul(b.sub(k, k_first), const(VECTORS))]), element.as_pointer())
            for v in range(vectors):
                store(load(b.gep(line, [const(v * width_lanes)]), mask), b.gep(into, [const(v * width_lanes)]), None)
        loop(b, k_first, k_end, copy, "pack")

    blocks_end = b.mul(b.sdiv(rows, const(ROWS)), const(ROWS))

    def rest(run):
        """run(height) for the rows from blocks_end on, if any: the tile of the least height in
        TAIL_HEIGHTS that holds them, its rows past the last clamped to the last (a tile of each row
        count: 7 more of each were 2/3 of this module's compile time)."""
        left = b.sub(rows, blocks_end)
        done = b.append_basic_block("rest.done")
        cases = b.switch(left, done)
        for height in TAIL_HEIGHTS:
            case = b.append_basic_block(f"rest.{height}")
            for count in range(1 + max([h for h in TAIL_HEIGHTS if h < height], default=0), height + 1):
                cases.add_case(const(count), case)
            b.position_at_end(case)
            run(height)
            b.branch(done)
        b.position_at_end(done)

    def over_rows(column, vectors: int, mask=None):
        """tile() for every block of ROWS rows of the output, then the rows left (rest()): a slice of
        DEPTH_BLOCK values of k at a time from the pack where there is more than one block of rows
        and `spread`, else the whole product per tile, b read in place (a convolution's narrow
        columns or taps, or large weights: a's rows stream through in order, and the hardware
        prefetcher keeps up with them; slice by slice it did not: DCGAN's discriminator 38 ms
        against 31)."""
        def part(k_first):
            k_end = b.add(k_first, const(DEPTH_BLOCK))
            k_end = b.select(b.icmp_signed("<", k_end, depth), k_end, depth)
            packed(column, vectors, k_first, k_end, mask)
            loop(b, const(0), blocks_end, lambda r: tile(r, column, vectors, k_first, k_end, mask=mask, packed=True),
                 "rows", step=ROWS)
            rest(lambda height: tile(blocks_end, column, vectors, k_first, k_end, mask=mask, packed=True,
                                     height=height))
        with b.if_else(b.and_(b.icmp_signed(">", rows, const(ROWS)), spread)) as (blocked, whole):
            with blocked:
                # (A product of depth 0 still writes its bias: one part that runs no k.)
                parts_end = b.select(b.icmp_signed(">", depth, const(0)), depth, const(1))
                loop(b, const(0), parts_end, part, "part", step=DEPTH_BLOCK)
            with whole:
                with b.if_then(b.icmp_signed(">=", rows, const(ROWS))):
                    tile(const(0), column, vectors, const(0), depth, ahead=vectors == VECTORS, mask=mask)
                loop(b, const(ROWS), blocks_end, lambda r: tile(r, column, vectors, const(0), depth, mask=mask),
                     "rows", step=ROWS)
                rest(lambda height: tile(blocks_end, column, vectors, const(0), depth, mask=mask, height=height))

    # The range's vectors of columns: whole panels, then what is left of them as one narrower tile,
    # then (in the range that ends the row) the columns that fill no vector, as one masked vector.
    panel = VECTORS * width_lanes
    # Packed slices where b's rows are more than a panel apart and a stays in L2 while the slices
    # go by (a convolution's weights of 512 KB or more stream from memory best row by row, whole) -
    # or a is a few blocks of rows (a batch through a layer) under a b too large for L2: read in place,
    # b went from memory once per block of rows, its rows a page or less apart - where the prefetchers
    # stop - at ~5 GB/s (mnist's 16 x 9216 by 9216 x 128: 2 ms, 19 GFLOP/s).
    small_a = b.icmp_signed("<=", b.mul(rows, depth), const(PACKED_A_BYTES // element_bytes))
    few_blocks = b.and_(b.icmp_signed("<=", rows, const(FEW_BLOCKS * ROWS)),
                        b.icmp_signed("<=", b.mul(rows, depth), const(FEW_BLOCKS_A_BYTES // element_bytes)))
    # Or, in the plain loop, b's rows are FAR_ROW_BYTES or more apart whatever a's size: read in place,
    # rows 1-4 KB apart share a few of L1's sets (256 x 2048 by 2048 x 512: 52 GFLOP/s in place, 129
    # packed, a re-read from L2 once per panel); rows closer than that read in place as fast or faster
    # (2048 x 128 under 256 x 2048 weights, a DCGAN discriminator's images side by side: 146 against 127).
    # The row-table loop mostly reads in place: its rows of b are taps, shifted views of one image's
    # phases (of at most a few MB, mostly in L2), and the next panel's part of each is asked for
    # ahead; packed, the copy cost more than it saved (superres's 5x5 layer, K = 25, 1.2x torch's
    # oneDNN's time for the same product packed, 0.95x in place; its 3x3 ones, K = 576, 0-10% faster
    # too; ResNet-18's 7x7 stem, K = 147, a second slice of 3, 2% slower packed). It packs two slices
    # of taps under 64 rows or more (TAPS_PACKED_DEPTHS): the small CNN's conv2, 64 x 288 by 288 x
    # 1056 over four stride-2 phases, touches ~40 KB of them per panel in place - with a's rows, more
    # than L1 holds for the next block of rows - and ran 6-13% faster packed (DCGAN D's K = 1024+
    # 3% slower; not on Zen 5: packs_taps).
    taps_pack = b.and_(b.and_(b.icmp_signed(">", depth, const(TAPS_PACKED_DEPTHS[0])),
                              b.icmp_signed("<=", depth, const(TAPS_PACKED_DEPTHS[1]))),
                       b.and_(b.icmp_signed(">=", rows, const(TAPS_PACKED_ROWS)),
                              ir.Constant(ir.IntType(1), int(packs_taps(host_cpu())))))
    packs = b.and_(b.or_(small_a, few_blocks), taps_pack if row_table else ir.Constant(ir.IntType(1), 1))
    if not row_table:
        packs = b.or_(packs, b.icmp_signed(">=", b_step, const(FAR_ROW_BYTES // element_bytes)))
    spread = b.and_(b.icmp_signed(">", b_step, const(panel)), packs)
    first = b.mul(start, const(width_lanes))
    stop = b.select(b.icmp_signed("<", b.mul(end, const(width_lanes)), width), b.mul(end, const(width_lanes)), width)
    vectors_end = b.add(first, b.mul(b.sdiv(b.sub(stop, first), const(width_lanes)), const(width_lanes)))
    panels_end = b.add(first, b.mul(b.sdiv(b.sub(vectors_end, first), const(panel)), const(panel)))
    lane = ir.Constant(ir.VectorType(I64, width_lanes), list(range(width_lanes)))
    tail_mask = b.icmp_signed("<", lane, splat(b.sub(stop, vectors_end), ir.VectorType(I64, width_lanes)))

    def columns(run):
        """run(column, vectors, mask) for the range's whole panels, then what is left of its vectors
        as one narrower panel, then (in the range that ends the row) the columns that fill no vector,
        as one masked vector."""
        loop(b, first, panels_end, lambda c: run(c, VECTORS, None), "panel", step=panel)
        done = b.append_basic_block("vectors.done")
        cases = b.switch(b.sdiv(b.sub(vectors_end, panels_end), const(width_lanes)), done)
        for vectors in range(1, VECTORS):
            case = b.append_basic_block(f"vectors.{vectors}")
            cases.add_case(const(vectors), case)
            b.position_at_end(case)
            run(panels_end, vectors, None)
            b.branch(done)
        b.position_at_end(done)
        with b.if_then(b.icmp_signed("<", vectors_end, stop)):
            run(vectors_end, 1, tail_mask)

    def across(first_row, height: int):
        columns(lambda column, vectors, mask: tile(first_row, column, vectors, const(0), depth, mask=mask,
                                                   height=height))
    # A shallow product read in place goes block of rows by block of rows, each across every panel:
    # the block's rows of a (8 x SHALLOW_DEPTH, 8 KB at most) stay in L1 for all of them, where panel
    # by panel they came back from L2 or memory once per panel (2048 x 256 by 256 x 128: 1.07 -> 1.01x
    # torch's oneDNN's time; superres's 5x5 layer's taps, K = 25, 0.94 -> 0.82x).
    shallow = b.and_(b.icmp_signed("<=", depth, const(SHALLOW_DEPTH)),
                     b.not_(b.and_(b.icmp_signed(">", rows, const(ROWS)), spread)))
    with b.if_else(shallow) as (by_rows, by_panels):
        with by_rows:
            loop(b, const(0), blocks_end, lambda r: across(r, ROWS), "blocks", step=ROWS)
            rest(lambda height: across(blocks_end, height))
        with by_panels:
            columns(over_rows)
    b.ret_void()


def narrow_function(dtype: str) -> int:
    """The address of the narrow product's loop (NARROW_FUNCTIONS, _build_narrow) for a dtype name,
    compiled once per machine."""
    from .build import compiled

    name, element = NARROW_FUNCTIONS[dtype]
    sources = ("native/gemm", "native/loops", "native/threads", "codegen/llvm/loop")
    return compiled(f"gemm-narrow|{dtype}", sources, lambda triple: loop_module(triple, name, element, _build_narrow),
                    [name])[name]


def narrow_packed(a: np.ndarray) -> np.ndarray:
    """a (M, K) as the narrow product reads it: per vector of rows, its K columns one after another
    ((M / lanes, K, lanes), the last vector's missing rows zeros), so that a tile reads each of its
    vectors of rows as one stream (a read transposed, rows M apart, missed the prefetchers: ResNet-18's
    9 MB of 512x4608 weights went at half the speed)."""
    count = lanes(ir.DoubleType() if a.dtype == np.float64 else ir.FloatType())
    rows, depth = a.shape
    packed = np.zeros((-(-rows // count) * count, depth), a.dtype)
    packed[:rows] = a
    return np.ascontiguousarray(packed.reshape(-1, count, depth).transpose(0, 2, 1))


def _build_narrow(b: ir.IRBuilder, args, element) -> None:
    """out = a @ b + bias, floored where asked, for b of a few columns (up to NARROW_MAX_COLUMNS at a time):
    a 1x1 convolution of a 2x2 plane is 960 x 160 weights by 160 x 4 inputs, which the tiles above
    run a vector of 16 columns of which 4 are there (~33 GFLOP/s). Here a vector holds 16 rows of one
    output column instead: a tile of up to NARROW_TILE vectors, each k loading a vector of the rows'
    a (packed: narrow_packed()) and broadcasting each of the columns' b, the products scattered to
    their rows at the end. The range counts vectors of rows; meta and ptrs as the loop above's,
    ptrs[0] a packed."""
    start, end, (packed, matrix, out, bias, floor), (rows, depth, width, floored, bias_step, b_step, out_step) = \
        loop_arguments(b, args, element, 5, 7)
    lanes_count = lanes(element)
    vector = ir.VectorType(element, lanes_count)
    indices = ir.VectorType(I64, lanes_count)
    masks = ir.VectorType(ir.IntType(1), lanes_count)
    suffix = f"v{lanes_count}{'f64' if element == ir.DoubleType() else 'f32'}"
    masked_load = ir.Function(b.module, ir.FunctionType(vector, [vector.as_pointer(), I32, masks, vector]),
                              f"llvm.masked.load.{suffix}.p0")
    pointers = ir.VectorType(element.as_pointer(), lanes_count)
    scatter = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, pointers, I32, masks]),
                          f"llvm.masked.scatter.{suffix}.v{lanes_count}p0")
    maximum = ir.Function(b.module, ir.FunctionType(vector, [vector, vector]), f"llvm.maximum.{suffix}")
    address_type = ir.PointerType(ir.IntType(8))
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, I32, I32, I32]))
    element_bytes = VECTOR_BYTES // lanes_count
    align = ir.Constant(I32, element_bytes)
    zeros = ir.Constant(vector, [0.0] * lanes_count)

    def const(value):
        return ir.Constant(I64, value)

    splat = functools.partial(vector_splat, b)
    lane = ir.Constant(indices, list(range(lanes_count)))
    floor_value, ceiling_value, leaky, slope_value, positive = epilogue_values(b, floor, floored, element, vector)
    slots = [b.alloca(vector) for _ in range(NARROW_TILE)]
    row_limit = b.select(b.icmp_signed("<", b.mul(end, const(lanes_count)), rows), b.mul(end, const(lanes_count)), rows)

    def tile(first_vector, first_column, columns: int, blocks: int):
        firsts = [b.mul(b.add(first_vector, const(i)), const(lanes_count)) for i in range(blocks)]
        inside = [b.icmp_signed("<", b.add(splat(first, indices), lane), splat(row_limit, indices)) for first in firsts]
        # A tile's vectors past the last row load nothing, but from the first row's place: a masked
        # load whose lanes are all off still costs a microcode assist (~500 cycles on Zen 5) where
        # its address lies on a page not mapped - past the end of the packed weights (a tile of 6
        # vectors over 8: 140 us for 128x288 by 2 columns, 3 us read from a valid place).
        reads = [b.select(b.icmp_signed("<", first, row_limit), first, const(0)) for first in firsts]
        acc = [[slots[i * columns + j] for j in range(columns)] for i in range(blocks)]
        for i, first in enumerate(reads):
            start_value = b.select(b.icmp_signed("!=", bias_step, const(0)), b.call(masked_load, [
                b.bitcast(b.gep(bias, [first]), vector.as_pointer()), align, inside[i], zeros]), zeros)
            for cell in acc[i]:
                b.store(start_value, cell)

        def step(k):
            places = [b.gep(packed, [b.add(b.mul(first, depth), b.mul(k, const(lanes_count)))]) for first in reads]
            # Each vector of rows' weights, NARROW_AHEAD values of k ahead: in a model the weights come
            # from L3 (SqueezeNet's 5 MB), a cache line per k and vector of rows, too slow a stream for
            # the hardware prefetcher to run ahead of (its 1000x512 classifier by 9 columns at ~105
            # GFLOP/s a core, ~155 asking). (A prefetch past the weights' end reads nothing.)
            for place in places:
                b.call(prefetch, [b.bitcast(b.gep(place, [const(NARROW_AHEAD * lanes_count)]), address_type),
                                  ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)])
            values = [b.call(masked_load, [b.bitcast(place, vector.as_pointer()), align, inside[i], zeros])
                      for i, place in enumerate(places)]
            line = b.gep(matrix, [b.add(b.mul(k, b_step), first_column)])
            for j in range(columns):
                broadcast = splat(b.load(b.gep(line, [const(j)])), vector)
                for i in range(blocks):
                    total = b.fadd(b.load(acc[i][j]), b.fmul(values[i], broadcast, flags=CONTRACT), flags=CONTRACT)
                    b.store(total, acc[i][j])
        loop(b, const(0), depth, step, "k")
        base = splat(b.ptrtoint(out, I64), indices)
        for i, first in enumerate(firsts):
            row_addresses = b.add(base, b.mul(b.mul(b.add(splat(first, indices), lane), splat(out_step, indices)),
                                              splat(const(element_bytes), indices)))
            for j in range(columns):
                value = b.load(acc[i][j])
                value = b.select(b.icmp_signed("!=", floored, const(0)), b.call(maximum, [value, floor_value]), value)
                value = b.select(b.fcmp_ordered(">", value, ceiling_value), ceiling_value, value)
                value = b.select(leaky, b.select(b.fcmp_unordered("<=", value, positive), b.fmul(value, slope_value),
                                                 value), value)
                at = b.add(row_addresses, splat(b.mul(b.add(first_column, const(j)), const(element_bytes)), indices))
                b.call(scatter, [value, b.inttoptr(at, pointers), align, inside[i]])

    def chunk(first_column):
        """The columns from first_column: NARROW_MAX_COLUMNS of them, or what is left, each count with
        its own tile of as many vectors of rows as fit in NARROW_TILE accumulators."""
        left = b.sub(width, first_column)
        count = b.select(b.icmp_signed("<", left, const(NARROW_MAX_COLUMNS)), left, const(NARROW_MAX_COLUMNS))
        done = b.append_basic_block("columns.done")
        cases = b.switch(count, done)
        for columns in range(1, NARROW_MAX_COLUMNS + 1):
            case = b.append_basic_block(f"columns.{columns}")
            cases.add_case(const(columns), case)
            b.position_at_end(case)
            blocks = min(NARROW_MAX_BLOCKS, NARROW_TILE // columns)
            loop(b, start, end, lambda v, c=columns, k=blocks: tile(v, first_column, c, k), f"rows{columns}", step=blocks)
            b.branch(done)
        b.position_at_end(done)
    loop(b, const(0), width, chunk, "chunk", step=NARROW_MAX_COLUMNS)
    b.ret_void()


def epilogue_values(b: ir.IRBuilder, bounds, mode, element, vector):
    """(floor, ceiling, whether mode is 3, slope, zeros) of an epilogue (heads.epilogue), the values
    as vectors: bounds[1] is read only where mode is 2 (a plain floor may be one value; the ceiling
    is +inf otherwise), bounds[2] only where mode is 3, a LeakyReLU's where(value > 0, value,
    value * slope)."""
    def word(index):
        return ir.Constant(I64, index)
    clamped = b.icmp_signed(">", mode, word(1))
    ceiling = b.select(clamped, b.load(b.gep(bounds, [b.zext(clamped, I64)])), ir.Constant(element, float("inf")))
    leaky = b.icmp_signed("==", mode, word(3))
    slope = b.select(leaky, b.load(b.gep(bounds, [b.select(leaky, word(2), word(0))])), ir.Constant(element, 0.0))
    return (vector_splat(b, b.load(bounds), vector), vector_splat(b, ceiling, vector), leaky,
            vector_splat(b, slope, vector), ir.Constant(vector, [0.0] * vector.count))
