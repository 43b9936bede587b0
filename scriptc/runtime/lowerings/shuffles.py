"""pixel_shuffle in segment programs: the pixel_shuffle loop (native/shuffle.py) over the output's rows."""

from __future__ import annotations

from scriptc.native import shuffle
from scriptc.native.loops import loop_function

from ..program_values import NotNative, Builder, constant_of, dense, TensorValue


def _pixel_shuffle(builder: Builder, node, args, recorded):
    x, factor = dense(builder, args[0]), constant_of(args[1])
    shape = recorded[node.inputs[0]].shape
    if x.rank != 4 or type(factor) is not int or factor < 1 or shape[1] % (factor * factor) or \
            x.dtype.name not in shuffle.FUNCTIONS:
        raise NotNative("a pixel_shuffle not of a batch of float images, or arguments the op refuses")
    n, c, h, w = x.dims
    builder.equal(c, builder.const(shape[1]))
    channels = shape[1] // (factor * factor)
    r = builder.const(factor)
    out = builder.alloc(x.dtype, [n, builder.const(channels), builder.arithmetic("MUL", h, r),
                                  builder.arithmetic("MUL", w, r)])
    ptrs, meta = builder.block(2), builder.block(4)
    builder.copy_into(ptrs, [x.pointer, out.pointer], builder.compute)
    builder.copy_into(meta, [builder.const(channels), h, w, r], builder.shape)
    rows = builder.product([n, builder.const(channels * factor), h])
    builder.compute.append(("SPLIT", builder.const(loop_function("shuffle", x.dtype.name)), rows, ptrs, meta,
                            builder.product([rows, w, r])))
    return [TensorValue(x.dtype, out.dims, out.pointer, out.buffer)]
