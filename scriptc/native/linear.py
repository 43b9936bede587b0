"""A layer's product by its frozen weights, packed once: rows @ W (+ bias, then a ReLU's floor).

A segment program that multiplies by a constant matrix (a Linear layer's weights after freezing)
packs it once, when the program is written down, into panels of VECTORS vectors of columns,
each panel's K rows one after another (`pack`). The product then streams each panel from memory
in order - the hardware prefetcher's best case - where reading it in place walks rows 2-4 KB apart
(gemm.py copies each slice of a panel into a pack on every call instead). A tile of ROWS rows by
the panel's vectors stays in registers for a chunk of the depth (8 rows by 3 vectors, 24 of the 32
registers, as gemm.py; DEPTH_CHUNK steps of k, each chunk of the panel read by every block of rows
while it is in L2); it starts from the bias (one value per column: a Linear's), resumes from out's
partial sums at the next chunk and applies the floor as it stores the last, so a Linear + ReLU group
writes its result in one pass. The rows past the last block of ROWS run in tiles of 4, 2 and 1 rows
(a batch of 1 streams the panels once, as a GEMV does).
64x784x512 float32: ~155 GFLOP/s a core here, against 125-133 for gemm.py and 112 for numpy's
OpenBLAS (torch's oneDNN ~150); the VAE's 64x400x20: 94 against 52. With one base register per
row of a (loops.opaque) and no clamp in the prefetch (tile()), ~200 in cache (~82% of the FMA peak).
On AMD's Zen 5 (LLVM's znver5: two 512-bit FMA pipes, ~262 GFLOP/s a core measured) the same tile
runs 64x784x512 and 64x512x512 at 255-265 GFLOP/s: at the FMA peak, with nothing left to tune.

`scriptc_linear_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): ptrs = [a (M, K)
contiguous, packed (pack's layout), out (M, N) contiguous, bias (the packed bias: `pack_bias`),
floor (1,)]; meta = [M, K, N, floored]. The range counts panels (threads split the columns);
out = a @ W + bias, then maximum(out, floor) where floored is 1 (numpy's maximum: NaN stays NaN).
Each output adds its products in order of k, starting from the bias.
"""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np
from llvmlite import ir

from scriptc.codegen.llvm.loop import I32, I64, loop

from .huge_pages import huge_page_copy
from .loops import loop_arguments, loop_module, multiply_add_rows, opaque
from .loops import splat as vector_splat

FUNCTIONS = {"float32": ("scriptc_linear_f32", ir.FloatType()), "float64": ("scriptc_linear_f64", ir.DoubleType())}
VECTOR_BYTES = 64
ROWS, VECTORS = 8, 3   # the register tile (the module docstring)
REST_ROWS = (4, 2, 1)  # tiles for the rows past the last block of ROWS (ROWS's lower powers of two)
DEPTH_CHUNK = 1024     # steps of k a panel is read in by every block of rows (192 KB of panel)


def lanes(dtype: np.dtype) -> int:
    return VECTOR_BYTES // np.dtype(dtype).itemsize


def panel_columns(dtype: np.dtype) -> int:
    """The output columns of one panel (one index of the kernel's range)."""
    return VECTORS * lanes(dtype)


def panels(columns: int, dtype: np.dtype) -> int:
    return -(-columns // panel_columns(dtype))


def pack(weights: np.ndarray) -> np.ndarray:
    """The (K, N) matrix as the kernel reads it: per panel of panel_columns(dtype) columns, its K rows
    one after another, the last panel as many whole vectors wide as it needs (zeros past N)."""
    depth, columns = weights.shape
    width, vector = panel_columns(weights.dtype), lanes(weights.dtype)
    parts = []
    for first in range(0, columns, width):
        piece = weights[:, first:first + width]
        padded = np.zeros((depth, -(-piece.shape[1] // vector) * vector), weights.dtype)
        padded[:, :piece.shape[1]] = piece
        parts.append(padded.ravel())
    # (on 2 MB pages: every call streams all of it, huge_pages.py says why)
    return huge_page_copy(np.concatenate(parts)) if parts else np.zeros(0, weights.dtype)


# Packed weights by a sample of their values: a traced recurrent model multiplies by the same weights
# at every step, each step's a constant of its own (word-LM's 35 steps: 74 matrices, 6 different ones).
_PACKED: dict[tuple, list] = {}
_PACKED_LOCK = threading.Lock()


def packed(weights: np.ndarray) -> np.ndarray:
    """pack(weights), shared with every array of the same values packed before while both live (the
    cache holds neither: the programs that read a packed array keep it)."""
    flat = weights.reshape(-1)
    key = (weights.shape, weights.dtype.str, flat[:: max(1, flat.size // 64)].tobytes())
    with _PACKED_LOCK:
        entries = _PACKED.get(key, [])
        entries = [(original, result) for original, result in entries if original() is not None and result() is not None]
        found = next((result() for original, result in entries if np.array_equal(original(), weights)), None)
        if found is None:
            found = pack(weights)
            entries.append((weakref.ref(weights), weakref.ref(found)))
        if entries:
            _PACKED[key] = entries
        return found


def pack_bias(bias: np.ndarray | None, columns: int, dtype: np.dtype) -> np.ndarray:
    """The bias as the kernel reads it: N values, zeros to the last whole vector (all zeros for none)."""
    vector = lanes(dtype)
    padded = np.zeros(max(1, -(-columns // vector)) * vector, dtype)
    if bias is not None:
        padded[:columns] = bias
    return padded


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:
    start, end, (a, packed, out, bias, floor), (rows, depth, width, floored) = \
        loop_arguments(b, args, element, 5, 4)

    def const(value):
        return ir.Constant(I64, value)
    n = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
    align = VECTOR_BYTES // n
    vector = ir.VectorType(element, n)
    suffix = f"v{n}{'f64' if element == ir.DoubleType() else 'f32'}"
    mask_type = ir.VectorType(ir.IntType(1), n)
    masked_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), I32, mask_type]),
                               f"llvm.masked.store.{suffix}.p0")
    masked_load = ir.Function(b.module, ir.FunctionType(vector, [vector.as_pointer(), I32, mask_type, vector]),
                              f"llvm.masked.load.{suffix}.p0")
    maximum = ir.Function(b.module, ir.FunctionType(vector, [vector, vector]), f"llvm.maximum.{suffix}")

    splat = functools.partial(vector_splat, b)
    floor_value = splat(b.load(floor), vector)
    # The accumulators live in stack slots that LLVM promotes to registers.
    slots = [[b.alloca(vector) for _ in range(VECTORS)] for _ in range(ROWS)]
    panel_width = const(VECTORS * n)

    def load(pointer):
        return b.load(b.bitcast(pointer, vector.as_pointer()), align=align)

    address_type = ir.PointerType(ir.IntType(8))
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, I32, I32, I32]))

    def tile(first_row, count: int, panel, column, vectors: int, mask, depths, block=None):
        """out[first_row : first_row + count, column : column + vectors vectors] = the rows' products
        with the panel (its rows `vectors` vectors apart) over k in `depths` (first, end, whether
        first is 0, whether end is the depth): from the bias at k 0, else from out's partial sums;
        floored where asked once the depth is done. `mask`: the lanes of the last vector that are
        columns of out; `block` (the tile's index among the panel's blocks of ROWS rows): the first
        VECTORS blocks also ask for their share of the next panel's lines (depth lines each), one a
        step of k - the blocks of one panel ask for the next one, a few lines at a time, while they
        read this one from cache (asked for by the first block alone, all at once, they were ~3%
        faster than nothing; spread so, 4-12%: a model's layers stream from L3, each more than L2
        holds)."""
        k_first, k_end, from_bias, whole_depth = depths
        acc = [row[:vectors] for row in slots[:count]]
        at = [b.add(first_row, const(r)) for r in range(count)]
        for r, row in enumerate(acc):
            source = b.select(from_bias, b.gep(bias, [column]), b.gep(out, [b.add(b.mul(at[r], width), column)]))
            for v, cell in enumerate(row):
                pointer = b.bitcast(b.gep(source, [const(v * n)]), vector.as_pointer())
                if mask is not None and v == vectors - 1:
                    value = b.call(masked_load, [pointer, ir.Constant(I32, align), mask, ir.Constant(vector, None)])
                else:
                    value = b.load(pointer, align=align)
                b.store(value, cell)
        a_rows = [opaque(b, b.gep(a, [b.mul(row, depth)])) for row in at]  # (loops.opaque)
        step = const(vectors * n)
        next_panel = b.mul(depth, panel_width)  # (elements from this panel to the next: it is whole)

        def multiply_add(k, asks: bool):
            line = b.gep(panel, [b.mul(k, step)])
            values = [load(b.gep(line, [const(v * n)])) for v in range(vectors)]
            if asks:
                address = b.bitcast(b.gep(panel, [b.add(next_panel, b.mul(b.add(first_line, k), const(n)))]),
                                    address_type)
                b.call(prefetch, [address, ir.Constant(I32, 0), ir.Constant(I32, 2), ir.Constant(I32, 1)])
            multiply_add_rows(b, acc, a_rows[:count], k, values, vector)
        if block is None:
            loop(b, k_first, k_end, lambda k: multiply_add(k, False), "k")
        else:
            # the first VECTORS blocks ask for the next panel's lines (depth of them each), the others none
            first_line = b.mul(block, depth)
            with b.if_else(b.icmp_signed("<", block, const(VECTORS))) as (asking, quiet):
                with asking:
                    loop(b, k_first, k_end, lambda k: multiply_add(k, True), "k")
                with quiet:
                    loop(b, k_first, k_end, lambda k: multiply_add(k, False), "k")
        with b.if_else(b.and_(b.icmp_signed("!=", floored, const(0)), whole_depth)) as (with_floor, plain):
            for lower in (with_floor, plain):
                with lower:
                    for r, row in enumerate(at):
                        target = b.gep(out, [b.add(b.mul(row, width), column)])
                        for v in range(vectors):
                            value = b.load(acc[r][v])
                            if lower is with_floor:
                                value = b.call(maximum, [value, floor_value])
                            pointer = b.bitcast(b.gep(target, [const(v * n)]), vector.as_pointer())
                            if mask is not None and v == vectors - 1:
                                b.call(masked_store, [value, pointer, ir.Constant(I32, align), mask])
                            else:
                                b.store(value, pointer, align=align)

    blocks_end = b.mul(b.sdiv(rows, const(ROWS)), const(ROWS))

    def over_rows(panel, column, vectors: int, mask=None):
        # The depth in chunks of DEPTH_CHUNK steps, each chunk of the panel read by every block of
        # rows in turn: it stays in L2 for the second block, where the whole panel (mnist's fc1:
        # 1.8 MB) was streamed again from L3 (one chunk even at depth 0: the bias is written).
        chunks = b.sdiv(b.add(depth, const(DEPTH_CHUNK - 1)), const(DEPTH_CHUNK))
        chunks = b.select(b.icmp_signed(">", chunks, const(1)), chunks, const(1))
        last_chunk = b.sub(chunks, const(1))

        def chunk(c):
            k_first = b.mul(c, const(DEPTH_CHUNK))
            k_end = b.add(k_first, const(DEPTH_CHUNK))
            depths = (k_first, b.select(b.icmp_signed("<", k_end, depth), k_end, depth),
                      b.icmp_signed("==", c, const(0)), b.icmp_signed("==", c, last_chunk))
            # (Whole panels ask for the next; past the last one, a prefetch reads nothing: it never faults.)
            loop(b, const(0), blocks_end, lambda r: tile(r, ROWS, panel, column, vectors, mask, depths,
                                                         b.sdiv(r, const(ROWS)) if vectors == VECTORS else None),
                 "rows", step=ROWS)
            # The rows left (fewer than ROWS): a tile of each power of two their count has.
            left, first = b.sub(rows, blocks_end), blocks_end
            for count in REST_ROWS:
                has = b.icmp_signed("!=", b.and_(left, const(count)), const(0))
                with b.if_then(has):
                    tile(first, count, panel, column, vectors, mask, depths)
                first = b.add(first, b.select(has, const(count), const(0)))
        loop(b, const(0), chunks, chunk, "chunk")

    def one_panel(p):
        column = b.mul(p, panel_width)
        panel = b.gep(packed, [b.mul(column, depth)])
        left = b.sub(width, column)
        with b.if_else(b.icmp_signed(">=", left, panel_width)) as (whole, last):
            with whole:
                over_rows(panel, column, VECTORS)
            with last:
                # The last panel: as many vectors as its columns need (packed that wide), the last
                # one's lanes past N masked off.
                vectors = b.sdiv(b.add(left, const(n - 1)), const(n))
                lane = ir.Constant(ir.VectorType(I64, n), list(range(n)))
                filled = b.sub(left, b.mul(b.sub(vectors, const(1)), const(n)))
                mask = b.icmp_signed("<", lane, splat(filled, ir.VectorType(I64, n)))
                # (Branches, not a switch: a jump table's relocation is more than the small code model places.)
                for count in range(1, VECTORS + 1):
                    with b.if_then(b.icmp_signed("==", vectors, const(count))):
                        over_rows(panel, column, count, mask)
    loop(b, start, end, one_panel, "panel")
    b.ret_void()
