"""Lowerings that call native kernels: pooling (the pool loop), products (BLAS, the few-row loop,
the compiled GEMM), convolutions (depthwise loop, im2col and GEMM) and transposed ones (GEMM, col2im)."""

from __future__ import annotations

import numpy as np

from scriptc.native import linear
from scriptc.native import program as native
from scriptc.native.blas import cblas_addresses
from scriptc.native.geometry import average_divisors, conv_geometry, pool_geometry
from scriptc.native.heads import GEMM_MIN_ROWS, GEMM_SPLIT_MIN, MATVEC_MIN_COLUMNS, MATVEC_ROWS, gemm_runs
from scriptc.native.loops import loop_function

from ..convolution_lowering import convolution
from ..transposed_lowering import conv_transpose
from ..groups import PARALLEL_MIN_ELEMENTS
from ..program_values import (NotNative, Builder, constant_array, constant_of, contiguous_of, dense, TensorValue,
                              value_of)


def _pool(mode: int | None):
    """max_pool2d / avg_pool2d with the pool loop: the image size the recorded call had (checked);
    mode None: adaptive_avg_pool2d to sizes that divide the image's (an average pool of that kernel)."""
    def lower(builder: Builder, node, args, recorded):
        from scriptc.native import blocked_depthwise, blocked_pool, pool, windows
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
        # (split across the pool by planes, or blocks of channels: each one's outputs from its own inputs)
        work = builder.product([x.dims[0], x.dims[1], builder.const(geometry[0] * geometry[1])])
        if kind == pool.MAX and blocked_pool.takes(geometry):  # by blocks of channels (blocked_pool.py)
            ptrs, meta = builder.block(2), builder.block(13)
            builder.copy_into(ptrs, [x.pointer, out.pointer], builder.compute)
            builder.copy_into(meta, [x.dims[1]] + [builder.const(g) for g in geometry], builder.shape)
            lanes = blocked_depthwise.lanes(x.dtype.name)
            per_image = builder.arithmetic("DIV", builder.arithmetic("ADD", x.dims[1], builder.const(lanes - 1)),
                                           builder.const(lanes))
            blocks = builder.arithmetic("MUL", x.dims[0], per_image)
            builder.compute.append(("SPLIT", builder.const(loop_function("blocked_pool", x.dtype.name)), blocks, ptrs,
                                    meta, work))
            return [out]
        ptrs, meta = builder.block(5), builder.block(13)
        rows, columns = (builder.address_of(t) for t in windows.positions(geometry[2], geometry[3], x.dtype.name))
        builder.copy_into(ptrs, [x.pointer, out.pointer, divisors, rows, columns], builder.compute)
        builder.copy_into(meta, [builder.const(g) for g in geometry + [kind]], builder.shape)
        planes = builder.arithmetic("MUL", x.dims[0], x.dims[1])
        builder.compute.append(("SPLIT", builder.const(loop_function("pool", x.dtype.name)), planes, ptrs, meta, work))
        return [out]
    return lower


def _matmul(builder: Builder, node, args, recorded):
    return [_product(builder, *(dense(builder, args[i], recorded[node.inputs[i]]) for i in (0, 1)))]


def _product(builder: Builder, a: TensorValue, b: TensorValue, out: TensorValue | None = None) -> TensorValue:
    """a @ b for a vector or an a of rank 2 or more (its leading dims as rows) and b a matrix, both
    contiguous and of one float dtype (a batch of matrices by a batch of matrices: _batched_product),
    into `out` where given: by a constant b (frozen weights) the packed product where the compiled
    GEMM runs (linear_product); else BLAS's GEMV for one row, the few-row loop for 2-6 (heads.py's
    rules), the compiled GEMM split across the pool where it runs, else BLAS's GEMM."""
    dtype = a.dtype
    if a.rank >= 3 and b.rank == a.rank and out is None:
        return _batched_product(builder, a, b)
    if a.rank < 1 or b.rank != 2 or b.dtype != dtype or dtype.name not in ("float32", "float64"):
        raise NotNative("a product that is not rows (or a vector) times a matrix of one float dtype")
    if frozen_weights(b) is not None and out is None:
        return linear_product(builder, a, frozen_weights(b))
    depth, width = b.dims
    builder.equal(a.dims[-1], depth)
    rows = builder.product(a.dims[:-1])
    out = out or builder.alloc(dtype, a.dims[:-1] + [width])
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
        ptrs, meta = builder.block(5), builder.block(7)
        zero = builder.address_of(np.zeros(1, dtype))
        builder.copy_into(ptrs, [a.pointer, b.pointer, out.pointer, zero, zero], compute)
        builder.copy_into(meta, [rows, depth, width, native.ZERO, native.ZERO, width, width], builder.shape)
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


def _batched_product(builder: Builder, a: TensorValue, b: TensorValue) -> TensorValue:
    """a @ b for batches of matrices of the same batch dims (attention's scores and their values): a
    program loop over the batch, each of its products _product's into its slice of the output."""
    if b.dtype != a.dtype or a.dtype.name not in ("float32", "float64"):
        raise NotNative("a batched product not of one float dtype")
    for d in range(a.rank - 2):  # (a batch dim that broadcasts stays with the steps)
        builder.equal(a.dims[d], b.dims[d])
    (rows, depth), width = a.dims[-2:], b.dims[-1]
    builder.equal(depth, b.dims[-2])
    out = builder.alloc(a.dtype, a.dims[:-1] + [width])
    sizes = [builder.arithmetic("MUL", rows, depth), builder.arithmetic("MUL", depth, width),
             builder.arithmetic("MUL", rows, width)]
    first, _, close = builder.batch_steps(builder.product(a.dims[:-2]), 1)
    slices = []
    for whole, size, dims in ((a, sizes[0], [rows, depth]), (b, sizes[1], [depth, width]), (out, sizes[2], [rows, width])):
        offset, pointer = builder.register(), builder.register()
        builder.compute.append(("MUL", offset, first, size))
        builder.compute.append(("ADDR", pointer, whole.pointer, offset, a.dtype.itemsize))
        slices.append(TensorValue(a.dtype, dims, pointer, whole.buffer))
    _product(builder, *slices)
    close()
    return out


def frozen_weights(b) -> np.ndarray | None:
    """The array of a constant matrix the packed product can take (the compiled loops run on this
    CPU), or None."""
    if not isinstance(b, TensorValue) or b.root is None or b.root[0] != "constant" or not gemm_runs():
        return None
    array = b.root[1]
    return array if array.ndim == 2 and array.dtype.name in linear.FUNCTIONS else None


def linear_product(builder: Builder, a: TensorValue, weights: np.ndarray, bias: np.ndarray | None = None,
                  floor: float | None = None) -> TensorValue:
    """a @ weights (+ bias, then maximum with floor where given: a Linear and its ReLU) for a
    contiguous vector or a of rank 2 or more, of weights' dtype, from the packed product (native/linear.py):
    the weights packed now, once for every call of the program (and for every product by the same
    values: linear.packed)."""
    dtype = a.dtype
    depth, width = weights.shape
    builder.equal(a.dims[-1], builder.const(depth))
    rows = builder.product(a.dims[:-1])
    out = builder.alloc(dtype, a.dims[:-1] + [builder.const(width)])
    ptrs, meta = builder.block(5), builder.block(4)
    floor_value = np.full(1, 0.0 if floor is None else floor, dtype)
    constants = [linear.packed(weights), linear.pack_bias(bias, width, dtype), floor_value]
    builder.copy_into(ptrs, [a.pointer, builder.address_of(constants[0]), out.pointer,
                             builder.address_of(constants[1]), builder.address_of(constants[2])], builder.compute)
    builder.copy_into(meta, [rows, builder.const(depth), builder.const(width),
                             native.ONE if floor is not None else native.ZERO], builder.shape)
    # SPLIT compares with the elementwise threshold: scale the multiply-adds to it.
    work = builder.arithmetic("DIV", builder.arithmetic("MUL", rows, builder.const(depth * width)),
                              builder.const(max(1, GEMM_SPLIT_MIN // PARALLEL_MIN_ELEMENTS)))
    builder.compute.append(("SPLIT", builder.const(loop_function("linear", dtype.name)),
                            builder.const(linear.panels(width, dtype)), ptrs, meta, work))
    return out


def _conv2d(builder: Builder, node, args, recorded):
    return [conv2d(builder, args, recorded[node.inputs[0]], None, builder.destinations.get(id(node)))]


def conv2d(builder: Builder, args: list, x_value: np.ndarray, bounds: tuple | None, into=None) -> TensorValue:
    """A conv2d's lowering: a product where its kernel covers the whole image, else convolution's
    (which applies `bounds`, (floor, ceiling), as it stores, into `into`'s place in a cat's result
    where it can)."""
    product = _covering_product(builder, args, x_value, bounds)
    return product if product is not None else convolution(builder, args, x_value, bounds, into)


def _covering_product(builder: Builder, args: list, x_value: np.ndarray, bounds: tuple | None) -> TensorValue | None:
    """conv2d(args) of a batch like `x_value` as the product (N, C*H*W) @ (C*H*W, O) where its kernel
    covers the whole unpadded image (one output position an image: DCGAN's discriminator's last
    layer, 512 channels of 4x4, where im2col copied 16 x 512 x 4 short rows, 1.7 ms against the
    product's 0.05) and nothing follows in it (no bias, no floor, one group); None otherwise."""
    if args[2] is not None or bounds is not None or len(x_value.shape) != 4:
        return None
    weight = constant_array(args[1])
    stride, padding, dilation, groups = (constant_of(a) for a in args[3:7])
    geometry = conv_geometry(x_value.shape, weight.shape, stride, padding, dilation, groups)
    if geometry is None or groups != 1 or weight.dtype != x_value.dtype:
        return None
    _, _, ph, pw, dh, dw, oh, ow = geometry
    c, h, w = x_value.shape[1:]
    if (ph, pw, oh, ow) != (0, 0, 1, 1) or weight.shape[2:] != (h, w) or (h > 1 and dh != 1) or (w > 1 and dw != 1):
        return None
    x = dense(builder, args[0])
    for d, size in zip(x.dims[1:], (c, h, w)):
        builder.equal(d, builder.const(size))
    rows = TensorValue(x.dtype, [x.dims[0], builder.const(c * h * w)], x.pointer, x.buffer, root=x.root)
    out = _product(builder, rows, value_of(builder, np.ascontiguousarray(weight.reshape(len(weight), -1).T), [], None))
    return TensorValue(out.dtype, out.dims + [native.ONE, native.ONE], out.pointer, out.buffer)


def _conv_transpose2d(builder: Builder, node, args, recorded):
    return [conv_transpose(builder, args, recorded[node.inputs[0]], None)]
