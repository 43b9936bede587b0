"""Scratch memory of a segment program: buffers whose values are dead share memory.

Every buffer the builder allocates was an arena range of its own, so a program's scratch grew with
its length: an unrolled (traced) recurrence of 35 steps and 2 layers held ~15 MB, each step writing
fresh memory far outside the core's cache (the word-LM LSTM's steps ran at half their in-cache
speed). A buffer lives from the top-level node that allocates it to the last top-level node that
reads it (a node with blocks counts as one: a loop's buffers live through all of its trips), and a
buffer allocated after another one's last reader may take its memory. Sizes are registers, known
only at run time, so a shared range is the largest of its buffers' sizes (a MAX in phase one),
and buffers of one size (one count register and item size) are put together first.

A cat along the channels of convolutions' outputs (SqueezeNet's Fire modules) is planned before the
nodes are lowered (plan_concatenations): each convolution writes its output straight into its
channels of the cat's result, which the first of them allocates, and the cat copies only the parts
that did not land there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scriptc.ir.graph import walk
from scriptc.native import program as native

from .program_values import Accumulator, Buffer, Builder, Pieces, TensorValue

# The ops whose output a planned cat asks to write into its result (convolution_lowering.image_output).
_WRITES_INTO_CONCATENATION = ("conv2d",)


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


@dataclass
class Concatenation:
    """A cat along dim 1 of 4-D tensors whose producers write their parts in place: per image each
    part's channels in one block, images sum(channels) planes apart. Its result is allocated by the
    first producer that writes into it; `placed`: by part index, the view of it a producer wrote."""
    channels: list[int]
    plane: tuple[int, int]
    dtype: object
    result: TensorValue | None = None
    placed: dict[int, TensorValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Destination:
    """Part `part` of a planned Concatenation: where its producer is asked to write."""
    concatenation: Concatenation
    part: int

    def view(self, builder: Builder, batch: int, dtype, planes: tuple) -> TensorValue | None:
        """The part's channels of the cat's result, for a producer of `batch` (a register) images of
        `planes` (channels, height, width); None where they are not the planned part's."""
        joined = self.concatenation
        if dtype != joined.dtype or tuple(planes) != (joined.channels[self.part], *joined.plane):
            return None
        const = builder.const
        if joined.result is None:
            joined.result = builder.alloc(dtype, [batch, const(sum(joined.channels)), *map(const, joined.plane)])
        else:
            builder.equal(batch, joined.result.dims[0])
        plane = joined.plane[0] * joined.plane[1]
        pointer = builder.register()
        builder.compute.append(("ADDR", pointer, joined.result.pointer, const(sum(joined.channels[:self.part]) * plane),
                                dtype.itemsize))
        view = TensorValue(dtype, [batch, *map(const, planes)], pointer, joined.result.buffer,
                           [const(sum(joined.channels) * plane), const(plane), const(joined.plane[1]), native.ONE])
        joined.placed[self.part] = view
        return view


def only_reader(value, reader, slot_of: dict, outside: set) -> bool:
    """Whether `reader` is the only reader of `value`, which leaves the segment (`outside`: its
    output slots) neither: what writes `value` may then write it where `reader` wants it."""
    users = list(value.uses)
    return len(users) == 1 and users[0].user is reader and slot_of.get(id(value)) not in outside


def plan_concatenations(nodes: list, slot_of: dict, frame: list, out_slots: list[int]) -> tuple[dict, dict]:
    """(Destination by producer node id, Concatenation by cat node id) for the cats among `nodes` (a
    segment's top-level nodes; `frame`: the recorded call's values by slot) along dim 1 of 4-D
    tensors of one dtype whose list is read by nothing else, and each part a convolution's only
    output that nothing else reads, outside the segment neither: its view of the cat's result is then
    never read as a tensor of its own (a producer read elsewhere keeps its own buffer)."""
    inside = {id(node) for node in nodes}
    outside = set(out_slots)
    destinations, concatenations = {}, {}

    for node in nodes:
        if node.op != "cat":
            continue
        listed, dim = node.inputs[0].node, node.inputs[1].node
        result = frame[slot_of[id(node.output)]]
        if listed is None or listed.op != "prim::ListConstruct" or id(listed) not in inside or \
                not only_reader(listed.output, node, slot_of, outside) or dim is None or dim.op != "prim::Constant" or \
                type(result) is not np.ndarray or result.ndim != 4 or \
                type(dim.attrs.get("value")) is not int or dim.attrs["value"] not in (1, -3):
            continue
        parts = listed.inputs
        recorded = [frame[slot_of[id(v)]] for v in parts]
        if len({id(v) for v in parts}) != len(parts) or any(
                type(r) is not np.ndarray or r.dtype != result.dtype or r.ndim != 4 for r in recorded):
            continue
        joined = Concatenation([r.shape[1] for r in recorded], result.shape[2:], result.dtype)
        for k, value in enumerate(parts):
            producer = value.node
            if producer is not None and id(producer) in inside and len(producer.outputs) == 1 and \
                    only_reader(value, listed, slot_of, outside) and _writes_into_concatenation(producer):
                destinations[id(producer)] = Destination(joined, k)
                concatenations[id(node)] = joined
    return destinations, concatenations


def _writes_into_concatenation(node) -> bool:
    """A node of an op that writes into a planned cat's result, or a FusionGroup headed by one."""
    if node.op == "prim::FusionGroup":
        node = next((n for n in node.blocks[0] if n.op != "prim::Constant"), node)
    return node.op in _WRITES_INTO_CONCATENATION
