"""Scratch memory of a segment program: buffers whose values are dead share memory.

Every buffer the builder allocates was an arena range of its own, so a program's scratch grew with
its length: an unrolled (traced) recurrence of 35 steps and 2 layers held ~15 MB, each step writing
fresh memory far outside the core's cache (the word-LM LSTM's steps ran at half their in-cache
speed). A buffer lives from the top-level node that allocates it to the last top-level node that
reads it (a node with blocks counts as one: a loop's buffers live through all of its trips), and a
buffer allocated after another one's last reader may take its memory. Sizes are registers, known
only at run time, so a shared range is the largest of its buffers' sizes (a MAX in phase one),
and buffers of one size (one count register and item size) are put together first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scriptc.ir.graph import walk
from scriptc.native import program as native

from .program_values import Accumulator, Buffer, Builder, Pieces, TensorValue


@dataclass
class SharedRange:
    """One arena range and the buffers that take it in turn (the first one's pointer register is
    the range's)."""
    buffers: list[Buffer] = field(default_factory=list)

    @property
    def free_after(self) -> int:
        return self.buffers[-1].dies


def mark_lifetimes(nodes: list, syms: dict, slot_of: dict) -> None:
    """Extend each buffer's life to the last of `nodes` (top-level nodes, in program order) that
    reads a value living in it (`syms`: symbolic values by frame slot)."""
    last: dict[int, int] = {}
    for position, node in enumerate(nodes):
        for inner in [node] + [n for block in node.blocks for n in walk(block)]:
            for v in list(inner.inputs) + [v for block in inner.blocks for v in block.returns]:
                slot = slot_of.get(id(v))  # (a FusionGroup's body has values no frame holds)
                if slot is not None:
                    last[slot] = position
    for slot, position in last.items():
        for buffer in _buffers(syms.get(slot)):
            buffer.dies = max(buffer.dies, position)


def _buffers(sym):
    if isinstance(sym, TensorValue):
        if sym.buffer is not None:
            yield sym.buffer
    elif isinstance(sym, (list, tuple)):
        for item in sym:
            yield from _buffers(item)
    elif isinstance(sym, Pieces):
        yield from _buffers(sym.tensor)
    elif isinstance(sym, Accumulator):
        yield from _buffers(sym.stacked)


def share(builder: Builder) -> list[SharedRange]:
    """The scratch buffers grouped into ranges whose buffers' lives do not overlap, in the order
    they are allocated (out-arena buffers, the caller's results, keep ranges of their own)."""
    ranges: list[SharedRange] = []
    for buffer in sorted(builder.buffers, key=lambda b: b.born):
        if buffer.arena != native.SCRATCH:
            ranges.append(SharedRange([buffer]))
            continue
        free = [r for r in ranges if r.buffers[0].arena == native.SCRATCH and r.free_after < buffer.born]
        same = [r for r in free if any(b.count == buffer.count and b.itemsize == buffer.itemsize for b in r.buffers)]
        chosen = (same or free or [None])[0]
        if chosen is None:
            ranges.append(SharedRange([buffer]))
        else:
            chosen.buffers.append(buffer)
    return ranges


def allocation_records(builder: Builder, ranges: list[SharedRange]) -> tuple[list, list, list]:
    """(phase-one records sizing the shared ranges, their ALLOCs, the BASE and MOV records that give
    every buffer its address)."""
    sizes, allocs, bases = [], [], []
    for shared in ranges:
        first = shared.buffers[0]
        if all(b.count == first.count and b.itemsize == first.itemsize for b in shared.buffers):
            allocs.append(("ALLOC", first.pointer, first.count, first.itemsize, first.arena))
        else:
            largest = None
            for b in shared.buffers:
                size = builder.register()
                sizes.append(("MUL", size, b.count, builder.const(b.itemsize)))
                if largest is not None:
                    bigger = builder.register()
                    sizes.append(("MAX", bigger, largest, size))
                    size = bigger
                largest = size
            allocs.append(("ALLOC", first.pointer, largest, 1, first.arena))
        bases.append(("BASE", first.pointer, first.arena))
        bases += [("MOV", b.pointer, first.pointer) for b in shared.buffers[1:]]
    return sizes, allocs, bases
