"""Lowerings that call native kernels: pooling (the pool loop), products (BLAS, the few-row loop,
the compiled GEMM) and convolutions (depthwise loop, im2col and GEMM)."""

from __future__ import annotations

import numpy as np

from scriptc.native import program as native
from scriptc.native.blas import cblas_addresses
from scriptc.native.geometry import average_divisors, conv_geometry, pool_geometry
from scriptc.native.heads import GEMM_MIN_ROWS, GEMM_SPLIT_MIN, MATVEC_MIN_COLUMNS, MATVEC_ROWS, gemm_runs
from scriptc.native.loops import loop_function

from ..groups import PARALLEL_MIN_ELEMENTS
from ..program_values import NotNative, Builder, constant_of, constant_array, contiguous_of, dense, TensorValue


def _pool(mode: int | None):
    """max_pool2d / avg_pool2d with the pool loop: the image size the recorded call had (checked);
    mode None: adaptive_avg_pool2d to sizes that divide the image's (an average pool of that kernel)."""
    def lower(builder: Builder, node, args, recorded):
        from scriptc.native import pool
        kind = mode
        x = contiguous_of(args[0])
        constants = [constant_of(a) for a in args[1:]]
        concrete = recorded[node.inputs[0]]
        if x.rank != 4 or x.dtype.name not in pool.FUNCTIONS:
            raise NotNative("pooling that is not of 4-D floats")
        if kind is None:
            sizes = constants[0] if isinstance(constants[0], (list, tuple)) else [constants[0]] * 2
            h, w = concrete.shape[2:]
            out = [h if s is None else s for s in sizes]
            if len(out) != 2 or h % out[0] or w % out[1]:
                raise NotNative("an adaptive pool to sizes that do not divide the image's")
            kernel = [h // out[0], w // out[1]]
            constants = [kernel, kernel, [0, 0], False, True, None]
            kind = pool.AVERAGE
        if kind == pool.MAX:
            kernel_size, stride, padding, dilation, ceil_mode = constants
            geometry = pool_geometry(concrete.shape, kernel_size, stride, padding, dilation, ceil_mode)
            divisors = builder.const(0)
        else:
            kernel_size, stride, padding, ceil_mode, include_pad, divisor = constants
            geometry = pool_geometry(concrete.shape, kernel_size, stride, padding, 1, ceil_mode)
            table = None if geometry is None else average_divisors(geometry, x.dtype, include_pad, divisor)
            if table is None:
                raise NotNative("pooling arguments the op refuses")
            divisors = builder.address_of(table)
        if geometry is None:
            raise NotNative("pooling arguments the op refuses")
        builder.equal(x.dims[2], builder.const(geometry[0]))
        builder.equal(x.dims[3], builder.const(geometry[1]))
        out = builder.alloc(x.dtype, x.dims[:2] + [builder.const(geometry[2]), builder.const(geometry[3])])
        ptrs, meta = builder.block(3), builder.block(13)
        builder.copy_into(ptrs, [x.pointer, out.pointer, divisors], builder.compute)
        builder.copy_into(meta, [builder.const(g) for g in geometry + [kind]], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], x.dims[1])
        builder.compute.append(("KERNEL", builder.const(loop_function("pool", x.dtype.name)), planes, ptrs, meta))
        return [out]
    return lower


def _matmul(builder: Builder, node, args, recorded):
    return [_product(builder, dense(builder, args[0]), dense(builder, args[1]))]


def _product(builder: Builder, a: TensorValue, b: TensorValue) -> TensorValue:
    """a @ b for a of rank 2 or more (its leading dims as rows) and b a matrix, both contiguous and of
    one float dtype: BLAS's GEMV for one row, the few-row loop for 2-6 (heads.py's rules), the
    compiled GEMM split across the pool where it runs, else BLAS's GEMM."""
    dtype = a.dtype
    if a.rank < 2 or b.rank != 2 or b.dtype != dtype or dtype.name not in ("float32", "float64"):
        raise NotNative("a product that is not rows times a matrix of one float dtype")
    depth, width = b.dims
    builder.equal(a.dims[-1], depth)
    rows = builder.product(a.dims[:-1])
    out = builder.alloc(dtype, a.dims[:-1] + [width])
    blas = cblas_addresses()
    suffix = "F32" if dtype.name == "float32" else "F64"
    compute = builder.compute
    done = builder.label()
    if blas is not None:  # one row: GEMV
        more = builder.label()
        compute.append(("JLT", native.ONE, rows, more))
        compute.append((f"GEMV_{suffix}", builder.const(blas["gemv"][dtype.name]), depth, width, b.pointer,
                        a.pointer, out.pointer))
        compute.append(("JUMP", done))
        compute.append(("label", more))
    few = builder.label()
    if gemm_runs():
        from scriptc.native import gemm
        compute.append(("JLT", rows, builder.const(GEMM_MIN_ROWS), few))
        vectors = builder.arithmetic("DIV", builder.arithmetic("ADD", width, builder.const(
            gemm.vector_columns(dtype.name) - 1)), builder.const(gemm.vector_columns(dtype.name)))
        ptrs, meta = builder.block(5), builder.block(5)
        zero = builder.address_of(np.zeros(1, dtype))
        builder.copy_into(ptrs, [a.pointer, b.pointer, out.pointer, zero, zero], compute)
        builder.copy_into(meta, [rows, depth, width, native.ZERO, native.ZERO], builder.shape)
        # SPLIT compares with the elementwise threshold: scale the multiply-adds to it.
        work = builder.arithmetic("DIV", builder.product([rows, depth, width]),
                                  builder.const(max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
        compute.append(("SPLIT", builder.const(loop_function("gemm", dtype.name)), vectors, ptrs, meta, work))
    elif blas is not None:
        compute.append(("JLT", rows, builder.const(MATVEC_ROWS.start), few))
        compute.append((f"GEMM_{suffix}", builder.const(blas["gemm"][dtype.name]), rows, width, depth, a.pointer,
                        b.pointer, out.pointer))
    else:
        raise NotNative("no BLAS to call")
    compute.append(("JUMP", done))
    compute.append(("label", few))  # 2 to 6 rows: the few-row loop, one chunk of k
    ptrs, meta = builder.block(3), builder.block(4)
    builder.copy_into(ptrs, [a.pointer, b.pointer, out.pointer], compute)
    builder.copy_into(meta, [rows, depth, width, native.ONE], builder.shape)
    if blas is not None and gemm_runs():
        wide = builder.label()
        compute.append(("JLT", builder.const(MATVEC_MIN_COLUMNS - 1), width, wide))
        compute.append((f"GEMM_{suffix}", builder.const(blas["gemm"][dtype.name]), rows, width, depth, a.pointer,
                        b.pointer, out.pointer))
        compute.append(("JUMP", done))
        compute.append(("label", wide))
    compute.append(("KERNEL", builder.const(loop_function("matvec", dtype.name)), native.ONE, ptrs, meta))
    compute.append(("label", done))
    return out


def _convolution(builder: Builder, args: list, x_value: np.ndarray, floor: float | None) -> TensorValue:
    """conv2d of a batch of any size, the image size and channels the recorded call had (checked):
    the depthwise loop for a depthwise convolution, else per image its columns (the image itself for
    a 1x1 convolution of stride 1, im2col's otherwise) times each group's weights by the compiled GEMM,
    which adds the bias and applies the floor (a fused ReLU) as it stores."""
    from scriptc.native import im2col

    x = dense(builder, args[0])
    weight = constant_array(args[1])
    bias = None if args[2] is None else constant_array(args[2])
    stride, padding, dilation, groups = (constant_of(a) for a in args[3:7])
    if x.rank != 4 or weight.dtype != x.dtype or x.dtype.name not in im2col.FUNCTIONS or not gemm_runs():
        raise NotNative("a convolution not of 4-D floats of one dtype, or no compiled GEMM")
    geometry = conv_geometry(x_value.shape, weight.shape, stride, padding, dilation, groups)
    if geometry is None:
        raise NotNative("convolution arguments the op refuses")
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    _, c, h, w = x_value.shape
    o, per_group, kh, kw = weight.shape
    for d, size in zip(x.dims[1:], (c, h, w)):
        builder.equal(d, builder.const(size))
    out = builder.alloc(x.dtype, [x.dims[0], builder.const(o), builder.const(oh), builder.const(ow)])
    dtype, itemsize = x.dtype.name, x.dtype.itemsize
    floor_array = builder.address_of(np.full(1, 0.0 if floor is None else floor, x.dtype))
    zero_bias = builder.address_of(np.zeros(max(o, 1), x.dtype))
    bias_pointer = builder.address_of(np.ascontiguousarray(bias)) if bias is not None else zero_bias
    compute = builder.compute
    if groups == c == o and per_group == 1:  # depthwise: one loop over every image's planes
        ptrs, meta = builder.block(5), builder.block(14)
        taps = builder.address_of(np.ascontiguousarray(weight.reshape(c, -1)))
        builder.copy_into(ptrs, [x.pointer, taps, bias_pointer, out.pointer, floor_array], compute)
        builder.copy_into(meta, [builder.const(v) for v in (c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw,
                                                           floor is not None)], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], builder.const(c))
        work = builder.arithmetic("MUL", planes, builder.const(oh * ow * kh * kw // 2))
        compute.append(("SPLIT", builder.const(loop_function("depthwise", dtype)), planes, ptrs, meta, work))
        return out
    if groups > 64:
        raise NotNative("a grouped convolution of many groups")
    from scriptc.native import gemm
    depth, columns, rows = per_group * kh * kw, oh * ow, o // groups
    pointwise = (kh, kw, sh, sw, ph, pw) == (1, 1, 1, 1, 0, 0)
    cols = None
    if not pointwise:
        cols = builder.alloc(x.dtype, [builder.const(c * kh * kw * columns)])
        im2col_ptrs = builder.block(2)
        words = im2col.conv2d_meta(h, w, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw)
        meta_block = builder.block(len(words))
        for k, word in enumerate(words):
            builder.template[meta_block + k] = word
    image, top, done = builder.register(), builder.label(), builder.label()
    body = builder.label()
    compute.append(("MOV", image, native.ZERO))
    compute.append(("label", top))
    compute.append(("JLT", image, x.dims[0], body))
    compute.append(("JUMP", done))
    compute.append(("label", body))
    x_image, out_image = builder.register(), builder.register()
    compute.append(("ADDR", x_image, x.pointer, image, c * h * w * itemsize))
    compute.append(("ADDR", out_image, out.pointer, image, o * columns * itemsize))
    if cols is not None:
        builder.copy_into(im2col_ptrs, [x_image, cols.pointer], compute)
        compute.append(("KERNEL", builder.const(loop_function("im2col", dtype)), builder.const(c), im2col_ptrs,
                        meta_block))
    source = x_image if cols is None else cols.pointer
    vectors = builder.const(-(-columns // gemm.vector_columns(dtype)))
    work = builder.const(max(1, rows * depth * columns // max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    weights = np.ascontiguousarray(weight.reshape(groups, rows, depth))
    for g in range(groups):
        ptrs, meta = builder.block(5), builder.block(5)
        group_source, group_out = builder.register(), builder.register()
        compute.append(("ADDR", group_source, source, builder.const(g), depth * columns * itemsize))
        compute.append(("ADDR", group_out, out_image, builder.const(g), rows * columns * itemsize))
        group_bias = builder.register()
        compute.append(("ADDR", group_bias, bias_pointer, builder.const(g), rows * itemsize))
        builder.copy_into(ptrs, [builder.address_of(weights[g]), group_source, group_out, group_bias, floor_array],
                          compute)
        for k, value in enumerate((rows, depth, columns, floor is not None, 1 if bias is not None else 0)):
            builder.template[meta + k] = value
        compute.append(("SPLIT", builder.const(loop_function("gemm", dtype)), vectors, ptrs, meta, work))
    compute.append(("ADD", image, image, native.ONE))
    compute.append(("JUMP", top))
    compute.append(("label", done))
    return out


def _conv2d(builder: Builder, node, args, recorded):
    return [_convolution(builder, args, recorded[node.inputs[0]], None)]
