"""The frame of the executor's hand-written native loops (im2col.py, matvec.py): one module per
dtype, built on a disk-cache miss only, holding one function of the kernel signature
(start, end, ptrs, meta) that the runtime pool can split."""

from __future__ import annotations

from llvmlite import ir

from .threads import KERNEL


def loop_module(triple: str, name: str, element: ir.Type, build) -> ir.Module:
    """A module holding the function `name`, whose body build(builder, (start, end, ptrs, meta),
    element type) emits."""
    m = ir.Module(name=name)
    m.triple = triple
    fn = ir.Function(m, KERNEL, name=name)
    build(ir.IRBuilder(fn.append_basic_block("entry")), fn.args, element)
    return m
