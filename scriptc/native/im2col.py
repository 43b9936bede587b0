"""im2col for the executor's conv2d heads, as a native loop.

The op table's conv2d is im2col + GEMM, its im2col a copy of a 6-D strided view of the padded
input. numpy walks that view with short inner loops: for the small CNN's second conv (16x32x64x64,
3x3, stride 2) it writes the 19 MB of columns at ~5 GB/s, 5.8 ms, plus 1.5 ms to pad, against 6.9
ms of GEMM. This loop writes the same columns in one pass, reading the unpadded input and writing
zeros where a window hangs over the border: 3-3.6 ms there (~8 GB/s of the ~13 a copy reaches).

`scriptc_im2col_f32` / `_f64` have the kernel signature (start, end, ptrs, meta): rows [start, end)
of the (N*C, KH*KW*B*OW) columns of a contiguous (N, C, H, W) input for the band of output rows
[OY0, OY1) (B = OY1 - OY0 of them; a whole image's columns are the band [0, OH)); ptrs = [input,
columns]; meta = [H, W, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW, OY0, OY1, RS, then per kernel row i
the output rows [oy_lo, oy_hi) whose input row is inside the image, then the same per kernel column j
for output columns]; the rows of the columns are RS elements apart (B*OW, or more where several
images' columns lie side by side in one matrix). The bounds are worked out in Python (conv2d_meta), so the loop divides nothing.
A band's columns are what a convolution of a large image multiplies at a time: they stay in the
core's cache between im2col and the GEMM, where a whole image's (9 MB for 64 channels of 64x64,
3x3) go out to memory and come back.
"""

from __future__ import annotations

from llvmlite import ir

from scriptc.codegen.llvm.loop import loop

from .loops import loop_module
from .loops import splat as vector_splat

I64 = ir.IntType(64)
FUNCTIONS = {"float32": ("scriptc_im2col_f32", ir.FloatType()), "float64": ("scriptc_im2col_f64", ir.DoubleType())}
_FIELDS = ("H", "W", "KH", "KW", "OH", "OW", "SH", "SW", "DH", "DW", "PH", "PW", "OY0", "OY1", "RS")


def conv2d_meta(h: int, w: int, kh: int, kw: int, oh: int, ow: int, sh: int, sw: int, dh: int, dw: int,
                ph: int, pw: int, band: tuple[int, int] | None = None, row_stride: int | None = None) -> list[int]:
    """The meta words of one convolution's geometry (see the module docstring), for the columns of
    the output rows `band` (first, end), all of them when None, in rows `row_stride` apart (the band's
    width when None)."""
    def valid(size, out, stride, dilation, pad, k):
        # out positions o with 0 <= o*stride + k*dilation - pad < size
        lo = min(out, max(0, -(-(pad - k * dilation) // stride)))
        hi = max(lo, min(out, (size - 1 + pad - k * dilation) // stride + 1))
        return lo, hi
    rows = [valid(h, oh, sh, dh, ph, i) for i in range(kh)]
    cols = [valid(w, ow, sw, dw, pw, j) for j in range(kw)]
    first, end = (0, oh) if band is None else band
    stride = (end - first) * ow if row_stride is None else row_stride
    return ([h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, first, end, stride] + [v for r in rows for v in r] +
            [v for c in cols for v in c])


def _by_stride(b: ir.IRBuilder, stride, emit) -> None:
    """emit(stride) specialized for a stride of 1 and of 2, emit(stride) as given otherwise."""
    one, two = b.icmp_signed("==", stride, ir.Constant(I64, 1)), b.icmp_signed("==", stride, ir.Constant(I64, 2))
    with b.if_else(one) as (then, otherwise):
        with then:
            emit(ir.Constant(I64, 1))
        with otherwise:
            with b.if_else(two) as (then_two, other):
                with then_two:
                    emit(ir.Constant(I64, 2))
                with other:
                    emit(stride)


VECTOR_BYTES = 64
# Outputs per deinterleaving step at stride 2: one load of 2x this many inputs, one shuffle.
DEINTERLEAVE_LANES = 16
# How far ahead of its reads the padded copy (_padded_rows) asks for the input.
PADDED_COPY_AHEAD = 1024


def _declared(module: ir.Module, name: str, kind: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, kind, name)


def _deinterleaved(b: ir.IRBuilder, line, out, lo, hi, spare, element):
    """out[ox] = line[2 * ox] for ox from lo, DEINTERLEAVE_LANES at a time, for as many whole steps
    as fit in [lo, hi - spare). A step loads one input past the last it keeps, so the last step
    reads one past the row's last input: `spare` is 1 where that input is outside the image row (it
    could be past the end of the input), so that a step fewer runs; the rest goes as masked steps
    that read only the inputs they keep. Returns hi. (Left to itself, LLVM vectorizes the stride-2
    copy with gathers: 7x a copy's time.)"""

    lanes = DEINTERLEAVE_LANES
    wide, narrow = ir.VectorType(element, 2 * lanes), ir.VectorType(element, lanes)
    steps = b.sdiv(b.sub(b.sub(hi, lo), spare), ir.Constant(I64, lanes))
    end = b.add(lo, b.mul(b.select(b.icmp_signed(">", steps, ir.Constant(I64, 0)), steps, ir.Constant(I64, 0)),
                          ir.Constant(I64, lanes)))
    evens = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [2 * k for k in range(lanes)])
    align = 8 if element == ir.DoubleType() else 4

    def step(ox):
        pair = b.load(b.bitcast(b.gep(line, [b.mul(ox, ir.Constant(I64, 2))]), wide.as_pointer()), align=align)
        b.store(b.shuffle_vector(pair, pair, evens), b.bitcast(b.gep(out, [ox]), narrow.as_pointer()), align=align)
    loop(b, lo, end, step, "ox2", step=lanes)
    # The rest - up to lanes + spare outputs - as masked steps, each reading only the inputs it keeps
    # (a scalar loop of up to 8 copies a row cost the small CNN's strided conv a third of its im2col).
    suffix = "f64" if element == ir.DoubleType() else "f32"
    bits = ir.IntType(1)
    load = _declared(b.module, f"llvm.masked.load.v{2 * lanes}{suffix}.p0", ir.FunctionType(
        wide, [wide.as_pointer(), ir.IntType(32), ir.VectorType(bits, 2 * lanes), wide]))
    store = _declared(b.module, f"llvm.masked.store.v{lanes}{suffix}.p0", ir.FunctionType(
        ir.VoidType(), [narrow, narrow.as_pointer(), ir.IntType(32), ir.VectorType(bits, lanes)]))
    wide_lanes = ir.Constant(ir.VectorType(I64, 2 * lanes), list(range(2 * lanes)))
    narrow_lanes = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))

    def splat(value, count):
        return vector_splat(b, value, ir.VectorType(I64, count))

    def masked_step(ox):
        count = b.sub(hi, ox)  # (those past `lanes` are the next step's)
        reads = b.icmp_signed("<", wide_lanes, splat(b.sub(b.mul(count, ir.Constant(I64, 2)), ir.Constant(I64, 1)),
                                                      2 * lanes))
        pair = b.call(load, [b.bitcast(b.gep(line, [b.mul(ox, ir.Constant(I64, 2))]), wide.as_pointer()),
                             ir.Constant(ir.IntType(32), align), reads, ir.Constant(wide, ir.Undefined)])
        writes = b.icmp_signed("<", narrow_lanes, splat(count, lanes))
        b.call(store, [b.shuffle_vector(pair, pair, evens), b.bitcast(b.gep(out, [ox]), narrow.as_pointer()),
                       ir.Constant(ir.IntType(32), align), writes])
    loop(b, end, hi, masked_step, "ox2m", step=lanes)
    return hi


def module(triple: str, dtype: str) -> ir.Module:
    """The module of one dtype's loop (built on a cache miss only; one dtype at a time, as each takes
    ~0.35 s to optimize and most models need only float32's)."""
    return loop_module(triple, *FUNCTIONS[dtype], _build)


def _build(b: ir.IRBuilder, args, element) -> None:

    start, end, ptrs, meta = args

    def word(index):
        return b.load(b.gep(meta, [index if isinstance(index, ir.Value) else ir.Constant(I64, index)]))

    g = {f: word(k) for k, f in enumerate(_FIELDS)}
    rows_at, cols_at = len(_FIELDS), b.add(ir.Constant(I64, len(_FIELDS)), b.mul(g["KH"], ir.Constant(I64, 2)))
    src = b.bitcast(b.load(b.gep(ptrs, [ir.Constant(I64, 0)])), element.as_pointer())
    dst = b.bitcast(b.load(b.gep(ptrs, [ir.Constant(I64, 1)])), element.as_pointer())
    zero = ir.Constant(element, 0.0)
    image = b.mul(g["H"], g["W"])
    plane = b.mul(b.sub(g["OY1"], g["OY0"]), g["OW"])
    per_row = b.mul(b.mul(g["KH"], g["KW"]), g["RS"])

    def clamp(value, lo, hi):
        value = b.select(b.icmp_signed("<", value, lo), lo, value)
        return b.select(b.icmp_signed(">", value, hi), hi, value)

    def fill(out, lo, hi):
        loop(b, lo, hi, lambda o: b.store(zero, b.gep(out, [o])), "z")

    def channel(r):
        image_base = b.gep(src, [b.mul(r, image)])
        row_base = b.gep(dst, [b.mul(r, per_row)])

        def kernel_row(i):
            # The rows of the band whose input row is inside the image (an empty range clamped into it).
            oy_lo = clamp(word(b.add(ir.Constant(I64, rows_at), b.mul(i, ir.Constant(I64, 2)))), g["OY0"], g["OY1"])
            oy_hi = clamp(word(b.add(ir.Constant(I64, rows_at + 1), b.mul(i, ir.Constant(I64, 2)))), oy_lo,
                          g["OY1"])

            def kernel_col(j):
                ox_lo = word(b.add(cols_at, b.mul(j, ir.Constant(I64, 2))))
                ox_hi = word(b.add(b.add(cols_at, ir.Constant(I64, 1)), b.mul(j, ir.Constant(I64, 2))))
                block = b.gep(row_base, [b.mul(b.add(b.mul(i, g["KW"]), j), g["RS"])])
                fill(block, ir.Constant(I64, 0), b.mul(b.sub(oy_lo, g["OY0"]), g["OW"]))
                fill(block, b.mul(b.sub(oy_hi, g["OY0"]), g["OW"]), plane)
                # input column of output column ox: ox*SW + j*DW - PW
                x_offset = b.sub(b.mul(j, g["DW"]), g["PW"])

                def out_row(oy):
                    out = b.gep(block, [b.mul(b.sub(oy, g["OY0"]), g["OW"])])
                    iy = b.sub(b.add(b.mul(oy, g["SH"]), b.mul(i, g["DH"])), g["PH"])
                    line = b.gep(image_base, [b.add(b.mul(iy, g["W"]), x_offset)])
                    fill(out, ir.Constant(I64, 0), ox_lo)

                    def copy(stride):
                        first = ox_lo
                        if isinstance(stride, ir.Constant) and stride.constant == 2:
                            # The input column after the row's last: is it still in the image row?
                            after = b.add(b.add(b.mul(b.sub(ox_hi, ir.Constant(I64, 1)), stride), x_offset),
                                          ir.Constant(I64, 1))
                            spare = b.zext(b.icmp_signed(">=", after, g["W"]), I64)
                            first = _deinterleaved(b, line, out, ox_lo, ox_hi, spare, element)
                        loop(b, first, ox_hi, lambda ox: b.store(
                            b.load(b.gep(line, [b.mul(ox, stride)])), b.gep(out, [ox])), "ox")
                    # Strides 1 and 2 as constants: the vectorizer loads whole vectors for 1, and 2
                    # deinterleaves pairs of them; any other stride is a scalar loop.
                    _by_stride(b, g["SW"], copy)
                    fill(out, ox_hi, g["OW"])
                loop(b, oy_lo, oy_hi, out_row, "oy")
            loop(b, ir.Constant(I64, 0), g["KW"], kernel_col, "j")
        loop(b, ir.Constant(I64, 0), g["KH"], kernel_row, "i")
    lanes = VECTOR_BYTES // (8 if element == ir.DoubleType() else 4)
    one = ir.Constant(I64, 1)
    window_of_one = b.and_(b.and_(b.icmp_signed("==", g["KH"], one), b.icmp_signed("==", g["KW"], one)),
                           b.and_(b.icmp_signed("==", g["SH"], one), b.icmp_signed("==", g["SW"], one)))
    short = b.icmp_signed("<", g["OW"], ir.Constant(I64, lanes))
    with b.if_else(window_of_one) as (padded, windows):
        with padded:
            _padded_rows(b, g, start, end, src, dst, element, lanes)
        with windows:
            _windows(b, g, start, end, src, dst, element, lanes, short, channel)
    b.ret_void()


def _windows(b: ir.IRBuilder, g: dict, start, end, src, dst, element, lanes: int, short, channel) -> None:
    """The columns of a convolution's windows: `channel` row by row, or across rows for short rows."""
    with b.if_else(short) as (by_vectors, by_rows):
        with by_vectors:
            one = ir.Constant(I64, 1)
            contiguous = b.and_(b.icmp_signed("==", g["SW"], one), b.icmp_signed("==", b.mul(g["SH"], g["W"]), g["OW"]))
            with b.if_else(contiguous) as (loads, gathers):
                with loads:
                    _short_rows(b, g, start, end, src, dst, element, lanes, True)
                with gathers:
                    _short_rows(b, g, start, end, src, dst, element, lanes, False)
        with by_rows:
            loop(b, start, end, channel, "r")


def _padded_rows(b: ir.IRBuilder, g: dict, start, end, src, dst, element, lanes: int) -> None:
    """A window of one at stride 1 - the padded copy of channels [start, end) that a stride-1
    convolution's tap products read (its phase): each output row a vector at a time, one masked load
    of the input row's values it holds (none in a padding row) and one store. (The window loop's
    scalar fills of the padding and its vectorized copy with a remainder took 1.5x numpy's copy of
    the unpadded planes, ~12 ns a row of 64.) Each step asks for the input PADDED_COPY_AHEAD bytes on:
    in a model the input is a layer's output for the whole batch, back from L3 (super-res's 64
    channels of 64x64: 61 us an image, 54 asking; a prefetch past the input's end reads nothing)."""
    i32 = ir.IntType(32)
    values, masks = ir.VectorType(element, lanes), ir.VectorType(ir.IntType(1), lanes)
    suffix = f"v{lanes}{'f64' if element == ir.DoubleType() else 'f32'}"
    masked_load = _declared(b.module, f"llvm.masked.load.{suffix}.p0", ir.FunctionType(
        values, [values.as_pointer(), i32, masks, values]))
    masked_store = _declared(b.module, f"llvm.masked.store.{suffix}.p0", ir.FunctionType(
        ir.VoidType(), [values, values.as_pointer(), i32, masks]))
    align = ir.Constant(i32, 8 if element == ir.DoubleType() else 4)
    indices = ir.VectorType(i32, lanes)  # (lanes of int32: a vector of int64 is two registers)
    lane = ir.Constant(indices, list(range(lanes)))
    zeros = ir.Constant(values, [0.0] * lanes)

    def splat(value):
        return vector_splat(b, b.trunc(value, i32) if value.type == I64 else value, indices)
    image, width, out_width = b.mul(g["H"], g["W"]), g["W"], g["OW"]

    def splat_bit(bit):
        return vector_splat(b, bit, masks)
    address_type = ir.PointerType(ir.IntType(8))
    prefetch = b.module.declare_intrinsic("llvm.prefetch", [address_type],
                                          ir.FunctionType(ir.VoidType(), [address_type, i32, i32, i32]))

    def channel(r):
        image_base = b.gep(src, [b.mul(r, image)])
        block = b.gep(dst, [b.mul(r, g["RS"])])

        def out_row(oy):
            iy = b.sub(oy, g["PH"])
            inside = b.and_(b.icmp_signed(">=", iy, ir.Constant(I64, 0)), b.icmp_signed("<", iy, g["H"]))
            # (a padding row reads from the image's first: every lane masked off)
            line = b.gep(image_base, [b.select(inside, b.mul(iy, width), ir.Constant(I64, 0))])
            out = b.gep(block, [b.mul(b.sub(oy, g["OY0"]), out_width)])

            def vector(ox):
                columns = b.add(splat(ox), lane)
                ix = b.sub(columns, splat(g["PW"]))
                read = b.and_(b.and_(b.icmp_signed(">=", ix, splat(ir.Constant(i32, 0))),
                                     b.icmp_signed("<", ix, splat(width))), splat_bit(inside))
                ahead = b.gep(line, [b.add(ox, ir.Constant(I64, PADDED_COPY_AHEAD // (VECTOR_BYTES // lanes)))])
                b.call(prefetch, [b.bitcast(ahead, address_type), ir.Constant(i32, 0), ir.Constant(i32, 3),
                                  ir.Constant(i32, 1)])
                taken = b.call(masked_load, [b.bitcast(b.gep(line, [b.sub(ox, g["PW"])]), values.as_pointer()),
                                             align, read, zeros])
                b.call(masked_store, [taken, b.bitcast(b.gep(out, [ox]), values.as_pointer()), align,
                                      b.icmp_signed("<", columns, splat(out_width))])
            loop(b, ir.Constant(I64, 0), out_width, vector, "pv", step=lanes)
        loop(b, g["OY0"], g["OY1"], out_row, "po")
    loop(b, start, end, channel, "pr")


def _short_rows(b: ir.IRBuilder, g: dict, start, end, src, dst, element, lanes: int, contiguous: bool) -> None:
    """The columns of channels [start, end) of a plane of rows shorter than a vector: a vector of the
    band's positions at a time across rows, each kernel tap's lanes (and which of them fall on the
    padding) worked out once for every channel; each channel's values by one masked load where the
    tap's inputs follow one another (`contiguous`: stride 1, rows of outputs as long as the input's
    they step over), else by a gather. (Row by row, ResNet-18's 4x4 and 2x2 planes of 256-512
    channels took 90-120 us an image, ~1 GB/s.)"""
    i32 = ir.IntType(32)
    indices, values = ir.VectorType(i32, lanes), ir.VectorType(element, lanes)
    masks = ir.VectorType(ir.IntType(1), lanes)
    suffix = f"v{lanes}{'f64' if element == ir.DoubleType() else 'f32'}"
    module = b.module
    masked_load = _declared(module, f"llvm.masked.load.{suffix}.p0", ir.FunctionType(
        values, [values.as_pointer(), i32, masks, values]))
    masked_store = _declared(module, f"llvm.masked.store.{suffix}.p0", ir.FunctionType(
        ir.VoidType(), [values, values.as_pointer(), i32, masks]))
    pointers = ir.VectorType(element.as_pointer(), lanes)
    gather = _declared(module, f"llvm.masked.gather.{suffix}.v{lanes}p0", ir.FunctionType(
        values, [pointers, i32, masks, values]))
    align = ir.Constant(i32, 8 if element == ir.DoubleType() else 4)
    zeros, zero_values = ir.Constant(indices, [0] * lanes), ir.Constant(values, [0.0] * lanes)

    def splat(value):
        return vector_splat(b, b.trunc(value, i32) if value.type == I64 else value, indices)

    address_type = ir.VectorType(I64, lanes)
    element_bytes = ir.Constant(address_type, [8 if element == ir.DoubleType() else 4] * lanes)

    def splat_address(value):
        return vector_splat(b, value, address_type)

    image, taps = b.mul(g["H"], g["W"]), b.mul(g["KH"], g["KW"])
    first, last = b.mul(g["OY0"], g["OW"]), b.mul(g["OY1"], g["OW"])
    lane = ir.Constant(indices, list(range(lanes)))

    def chunk(p0):
        positions = b.add(splat(p0), lane)
        stored = b.icmp_signed("<", positions, splat(last))
        oy = b.sdiv(positions, splat(g["OW"]))
        ox = b.sub(positions, b.mul(oy, splat(g["OW"])))

        def kernel_row(i):
            iy = b.add(b.mul(oy, splat(g["SH"])), splat(b.sub(b.mul(i, g["DH"]), g["PH"])))
            rows_inside = b.and_(stored, b.and_(b.icmp_signed(">=", iy, zeros), b.icmp_signed("<", iy, splat(g["H"]))))

            def kernel_col(j):
                shift = b.sub(b.mul(j, g["DW"]), g["PW"])
                ix = b.add(b.mul(ox, splat(g["SW"])), splat(shift))
                inside = b.and_(rows_inside, b.and_(b.icmp_signed(">=", ix, zeros), b.icmp_signed("<", ix, splat(g["W"]))))
                at = b.add(b.mul(iy, splat(g["W"])), ix)
                # where the tap's inputs follow one another, the first lane's input is p0 plus this
                offset = b.add(p0, b.add(b.mul(b.sub(b.mul(i, g["DH"]), g["PH"]), g["W"]), shift))
                column = b.add(b.mul(b.add(b.mul(i, g["KW"]), j), g["RS"]), b.sub(p0, first))

                def channel(r):
                    plane = b.gep(src, [b.mul(r, image)])
                    if contiguous:
                        taken = b.call(masked_load, [b.bitcast(b.gep(plane, [offset]), values.as_pointer()), align,
                                                     inside, zero_values])
                    else:
                        addresses = b.add(splat_address(b.ptrtoint(plane, I64)),
                                          b.mul(b.sext(at, address_type), element_bytes))
                        taken = b.call(gather, [b.inttoptr(addresses, pointers), align, inside, zero_values])
                    target = b.gep(dst, [b.add(b.mul(b.mul(r, taps), g["RS"]), column)])
                    b.call(masked_store, [taken, b.bitcast(target, values.as_pointer()), align, stored])
                loop(b, start, end, channel, "rv")
            loop(b, ir.Constant(I64, 0), g["KW"], kernel_col, "jv")
        loop(b, ir.Constant(I64, 0), g["KH"], kernel_row, "iv")
    loop(b, first, last, chunk, "pv", step=lanes)
