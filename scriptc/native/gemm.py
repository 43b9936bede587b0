"""A matrix product for the executor's heads, as a native loop with 512-bit vectors.

numpy's OpenBLAS is often told which kernels to use (OPENBLAS_CORETYPE=Haswell here): on a CPU with
AVX-512 it then runs 256-bit kernels at half the machine's multiply-add rate - ~120 GFLOP/s a core
on this Zen 5, where onnxruntime's MLAS runs the small CNN's convolutions at twice that. This loop
is the classic register-blocked GEMM: a tile of ROWS rows of the output by VECTORS vectors of
columns stays in registers while k runs through the whole product; each k loads the tile's row of b
(VECTORS vectors) once for all its rows and one element of a per row, broadcast. 8 rows by 3
vectors (24 of the 32 registers) measured best here: the CNN's conv2 products (64x288x1024) at
236 GFLOP/s a core in cache and 192 us an image from memory, against 194 and 250 for 8 by 2; the
MLP's the same (~240).

`scriptc_gemm_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): ptrs = [a (M, K),
b (K, N), out (M, N), bias (M,), floor (1,)], all contiguous, out = a @ b + bias[:, None] (a
convolution's bias, one per output channel; zeros for a plain product), then maximum(out, floor)
where meta[3] is 1 (a fused ReLU's 0; numpy's maximum, a NaN stays NaN); meta = [M, K, N, floored,
bias step] (bias[row * step]: 1, or 0 for one value - a zero - for every row).
(The maximum costs a short product, K = 27, 10% where it runs: a flag, not a floor of -inf.) The range counts vectors of
columns of the output (the last one partial where N is not a multiple), so that threads split the
columns evenly; a range goes through them in panels of VECTORS vectors, its last vectors as one
narrower panel, and the columns that fill no vector as one masked vector (so a classifier's 10
columns run here too). A panel's columns of b are read once per ROWS rows of a, from the core's L2
while the rows go by. The first block of rows asks for the next panel's part of b as it goes: a
convolution's 16 images of columns (19 MB) otherwise came from memory at 265 us an image of the
CNN's conv2 against 185 in cache (8 by 2 tiles; 235 with the prefetches).
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_arguments, loop_module

I64 = ir.IntType(64)
I32 = ir.IntType(32)
FUNCTIONS = {"float32": ("scriptc_gemm_f32", ir.FloatType()), "float64": ("scriptc_gemm_f64", ir.DoubleType())}
VECTOR_BYTES = 64
ROWS = 8
VECTORS = 3
_CONTRACT = ("contract",)  # a multiply-add may become one fma (each product is still added in order)


def lanes(element: ir.Type) -> int:
    return VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)


def vector_columns(dtype: str) -> int:
    """The output columns one index of the loop's range covers."""
    return lanes(FUNCTIONS[dtype][1])


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:

    start, end, (a, matrix, out, bias, floor), (rows, depth, width, floored, bias_step) = loop_arguments(
        b, args, element, 5, 5)

    def const(value):
        return ir.Constant(I64, value)
    width_lanes = lanes(element)
    element_bytes = align = VECTOR_BYTES // width_lanes
    panel_bytes = VECTOR_BYTES * VECTORS
    address_type = ir.PointerType(ir.IntType(8))
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, I32, I32, I32]))

    def splat(scalar, vector):
        return b.shuffle_vector(b.insert_element(ir.Constant(vector, ir.Undefined), scalar, const(0)),
                                ir.Constant(vector, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, vector.count), [0] * vector.count))

    vector = ir.VectorType(element, width_lanes)
    suffix = f"v{width_lanes}{'f64' if element == ir.DoubleType() else 'f32'}.p0"
    mask_type = ir.VectorType(ir.IntType(1), width_lanes)
    masked_load = ir.Function(b.module, ir.FunctionType(vector, [vector.as_pointer(), I32, mask_type, vector]),
                              f"llvm.masked.load.{suffix}")
    masked_store = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [vector, vector.as_pointer(), I32, mask_type]),
                               f"llvm.masked.store.{suffix}")
    zeros = ir.Constant(vector, [0.0] * width_lanes)
    maximum = ir.Function(b.module, ir.FunctionType(vector, [vector, vector]),
                          f"llvm.maximum.v{width_lanes}{'f64' if element == ir.DoubleType() else 'f32'}")
    floor_value = splat(b.load(floor), vector)
    # The accumulators live in stack slots that LLVM promotes to registers (the loops' phis).
    slots = [[b.alloca(vector) for _ in range(VECTORS)] for _ in range(ROWS)]

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

    def tile(first_row, column, vectors: int, ahead: bool = False, mask=None):
        """out[first_row : first_row + ROWS, column : column + vectors vectors] = a @ b + bias there
        (the bias a column, one value per row), floored where asked; `ahead`: and ask for the next panel's part of b;
        `mask`: the lanes of a last, partial vector. Rows past the last are the last row again: their
        stores write what its own wrote."""
        acc = [row[:vectors] for row in slots]
        last = b.sub(rows, const(1))
        row_at = [b.select(b.icmp_signed("<", b.add(first_row, const(r)), rows), b.add(first_row, const(r)), last)
                  for r in range(ROWS)]
        for row, at in zip(acc, row_at):
            start_value = splat(b.load(b.gep(bias, [b.mul(at, bias_step)])), vector)
            for cell in row:
                b.store(start_value, cell)
        a_rows = [b.gep(a, [b.mul(at, depth)]) for at in row_at]
        b_column = b.gep(matrix, [column])

        def step(k):
            line = b.gep(b_column, [b.mul(k, width)])
            if ahead:
                # The next panel's part of this row of b, from memory: a row of b is a page or more
                # (a convolution's columns), too many streams for the hardware prefetcher to follow.
                # (The first block of rows asks; the others find the panel in cache.)
                for cache_line in range(panel_bytes // 64):
                    address = b.gep(line, [const((panel_bytes + 64 * cache_line) // element_bytes)])
                    b.call(prefetch, [b.bitcast(address, address_type), ir.Constant(I32, 0), ir.Constant(I32, 3),
                                      ir.Constant(I32, 1)])
            values = [load(b.gep(line, [const(v * width_lanes)]), mask) for v in range(vectors)]
            for r in range(ROWS):
                broadcast = splat(b.load(b.gep(a_rows[r], [k])), vector)
                for v in range(vectors):
                    total = b.fadd(b.load(acc[r][v]), b.fmul(broadcast, values[v], flags=_CONTRACT), flags=_CONTRACT)
                    b.store(total, acc[r][v])
        loop(b, const(0), depth, step, "k")
        with b.if_else(b.icmp_signed("!=", floored, const(0))) as (with_floor, plain):
            for lower in (with_floor, plain):
                with lower:
                    for r, at in enumerate(row_at):
                        target = b.gep(out, [b.add(b.mul(at, width), column)])
                        for v in range(vectors):
                            value = b.load(acc[r][v])
                            if lower is with_floor:
                                value = b.call(maximum, [value, floor_value])
                            store(value, b.gep(target, [const(v * width_lanes)]), mask)

    def over_rows(column, vectors: int, mask=None):
        """tile() for every block of ROWS rows of the output, the last one's rows clamped to the last
        (one tile for every row count: 7 more of each were 2/3 of this module's compile time)."""
        blocks_end = b.mul(b.sdiv(b.add(rows, const(ROWS - 1)), const(ROWS)), const(ROWS))
        with b.if_then(b.icmp_signed(">", rows, const(0))):
            tile(const(0), column, vectors, ahead=vectors == VECTORS, mask=mask)
        loop(b, const(ROWS), blocks_end, lambda r: tile(r, column, vectors, mask=mask), "rows", step=ROWS)

    # The range's vectors of columns: whole panels, then what is left of them as one narrower tile,
    # then (in the range that ends the row) the columns that fill no vector, as one masked vector.
    panel = VECTORS * width_lanes
    first = b.mul(start, const(width_lanes))
    stop = b.select(b.icmp_signed("<", b.mul(end, const(width_lanes)), width), b.mul(end, const(width_lanes)), width)
    vectors_end = b.add(first, b.mul(b.sdiv(b.sub(stop, first), const(width_lanes)), const(width_lanes)))
    panels_end = b.add(first, b.mul(b.sdiv(b.sub(vectors_end, first), const(panel)), const(panel)))
    loop(b, first, panels_end, lambda c: over_rows(c, VECTORS), "panel", step=panel)
    done = b.append_basic_block("vectors.done")
    cases = b.switch(b.sdiv(b.sub(vectors_end, panels_end), const(width_lanes)), done)
    for vectors in range(1, VECTORS):
        case = b.append_basic_block(f"vectors.{vectors}")
        cases.add_case(const(vectors), case)
        b.position_at_end(case)
        over_rows(panels_end, vectors)
        b.branch(done)
    b.position_at_end(done)
    with b.if_then(b.icmp_signed("<", vectors_end, stop)):
        lane = ir.Constant(ir.VectorType(I64, width_lanes), list(range(width_lanes)))
        over_rows(vectors_end, 1, mask=b.icmp_signed("<", lane, splat(b.sub(stop, vectors_end),
                                                                        ir.VectorType(I64, width_lanes))))
    b.ret_void()
