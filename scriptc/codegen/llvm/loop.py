"""The counted loop every lowering emits (kernels here, scriptc/native's hand-written loops)."""

from __future__ import annotations

from llvmlite import ir

I32, I64 = ir.IntType(32), ir.IntType(64)


def loop(b: ir.IRBuilder, start, end, body, name: str, step: int = 1, interleave: int | None = None):
    """for (i = start; i < end; i += step) body(i); `interleave` asks the vectorizer for that many
    vectors per iteration."""
    pre = b.block
    header = b.append_basic_block(f"{name}.header")
    loop_body = b.append_basic_block(f"{name}.body")
    exit_block = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name=name)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, end), loop_body, exit_block)
    b.position_at_end(loop_body)
    body(i)
    nxt = b.add(i, ir.Constant(I64, step))
    i.add_incoming(nxt, b.block)
    latch = b.branch(header)
    if interleave:
        latch.set_metadata("llvm.loop", _loop_id(b.module, interleave))
    b.position_at_end(exit_block)


def _loop_id(module: ir.Module, interleave: int):
    """A loop's metadata asking for `interleave` vectors per iteration. LLVM wants a loop ID that
    refers to itself first; llvmlite builds nodes from existing ones, so the node is made with a
    placeholder that is unique to it (add_metadata shares equal nodes) and then pointed at itself."""
    hint = module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"), ir.Constant(I32, interleave)])
    loop_id = module.add_metadata([ir.MetaDataString(module, f"loop {len(module.metadata)}"), hint])
    loop_id.operands = (loop_id, hint)
    return loop_id
