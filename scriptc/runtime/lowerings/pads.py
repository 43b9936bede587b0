"""F.pad in segment programs: the pad loop (native/pad.py) over the output's rows, for pads of the last
one or two dims of a batch of float planes, in every mode."""

from __future__ import annotations

import numpy as np

from scriptc.native import pad as native_pad
from scriptc.native.loops import loop_function
from scriptc.ops.padding import MODES, copy_runs, source_index

from ..program_values import NotNative, Builder, constant_of, dense, TensorValue


def _pad(builder: Builder, node, args, recorded):
    x = dense(builder, args[0])
    pad, mode, value = (constant_of(a) for a in args[1:4])
    shape = recorded[node.inputs[0]].shape
    if x.rank < 2 or x.dtype.name not in native_pad.FUNCTIONS or mode not in MODES or \
            len(pad) not in (2, 4) or min(pad) < 0 or 0 in shape[-2:]:
        raise NotNative("a pad of other than the last one or two dims of float planes by sizes of at least 0")
    left, right = pad[:2]
    top, bottom = pad[2:] if len(pad) == 4 else (0, 0)
    h, w = shape[-2:]
    # (the tables are made for this height and width: the recorded call's, which the op accepted)
    builder.equal(x.dims[-2], builder.const(h))
    builder.equal(x.dims[-1], builder.const(w))
    rows_table, columns_table = (np.ascontiguousarray(source_index(np, mode, size, before, after), dtype=np.int64)
                                 for size, before, after in ((h, top, bottom), (w, left, right)))
    # (the longest run of columns copied from consecutive input columns: the rest the column table fills)
    first, stop, run_in = max(copy_runs(columns_table), key=lambda run: run[1] - run[0], default=(0, 0, 0))
    run_out, run_length = first, stop - first
    out_h, out_w = h + top + bottom, w + left + right
    out = builder.alloc(x.dtype, x.dims[:-2] + [builder.const(out_h), builder.const(out_w)])
    fill = np.full(1, 0 if value is None or mode != "constant" else value, x.dtype)
    ptrs, meta = builder.block(5), builder.block(7)
    builder.copy_into(ptrs, [x.pointer, out.pointer, builder.address_of(rows_table),
                             builder.address_of(columns_table), builder.address_of(fill)], builder.compute)
    builder.copy_into(meta, [builder.const(v) for v in (h, w, out_h, out_w, run_out, run_length, run_in)],
                      builder.shape)
    rows = builder.arithmetic("MUL", builder.product(x.dims[:-2]), builder.const(out_h))
    builder.compute.append(("SPLIT", builder.const(loop_function("pad", x.dtype.name)), rows, ptrs, meta,
                            builder.arithmetic("MUL", rows, builder.const(out_w))))
    return [TensorValue(x.dtype, out.dims, out.pointer, out.buffer)]
