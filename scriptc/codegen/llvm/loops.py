"""The frame of the executor's hand-written native loops (im2col.py, matvec.py): one module per
dtype, built on a disk-cache miss only, holding one function of the kernel signature
(start, end, ptrs, meta) that the runtime pool can split."""

from __future__ import annotations

from llvmlite import ir

from .threads import KERNEL

I64 = ir.IntType(64)


def loop_module(triple: str, name: str, element: ir.Type, build) -> ir.Module:
    """A module holding the function `name`, whose body build(builder, (start, end, ptrs, meta),
    element type) emits."""
    m = ir.Module(name=name)
    m.triple = triple
    fn = ir.Function(m, KERNEL, name=name)
    build(ir.IRBuilder(fn.append_basic_block("entry")), fn.args, element)
    return m


def loop_arguments(b: ir.IRBuilder, args, element: ir.Type, pointers: int, words: int):
    """(start, end, ptrs[:pointers] as pointers to `element`, meta[:words] loaded) of a loop's
    kernel arguments."""
    start, end, ptrs, meta = args

    def word(array, index):
        return b.load(b.gep(array, [ir.Constant(I64, index)]))
    return (start, end, [b.bitcast(word(ptrs, i), element.as_pointer()) for i in range(pointers)],
            [word(meta, i) for i in range(words)])
