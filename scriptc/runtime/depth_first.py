"""Depth-first chains of convolutions in a segment program: consecutive layers run an image at a time.

Layer at a time, a convolution writes its whole batch's output before the next one reads it: the
small CNN's first layer writes 8 MB (16 images of 32 x 64x64) that go out to memory, and the second
reads them back cold in its phase copy. Where consecutive convolutions (with their fused epilogues)
each feed only the next, each runs its batch one image at a time (convolution_lowering.
image_by_image), and an image's output between them fits in a core's L2 beside the chain's weights,
the program runs the chain per image instead: the layers between are one image's scratch (its
buffer an image, not a batch), read back from the cache, and only the last layer writes the batch.
Every image's output comes from the same launches on the same data, so the bits are the layer at a
time program's. Decided from the layers' image sizes, never the batch: a program serves every
batch size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriptc.native import program as native
from scriptc.native.geometry import conv_geometry

from .convolution_lowering import ImageSlot, image_by_image
from .padded_planes import PaddedPlanes
from .program_memory import only_reader
from .program_values import Builder, NotNative, TensorValue, dense

# An image's output between two layers of a chain at most this (a core's L2 is 2 MB here: the next
# layer's phases or columns and the GEMM's panels share it), the chain's weights together at most
# WEIGHT_BYTES (read again for every image).
IMAGE_BYTES = 1 << 20
WEIGHT_BYTES = 1 << 20


@dataclass
class Chain:
    """Top-level nodes (at `positions`, with nothing but constants between them), each convolving
    the previous one's output; `source`: the IR value the first one convolves."""
    positions: list[int]
    nodes: list
    source: object
    in_place: bool = True  # (whether the last one writes its image of the batch's output itself)


def chains(nodes: list, executor, recorded, out_slots: list[int], destinations: dict) -> dict[int, Chain]:
    """The depth-first chains among a segment's top-level `nodes`, by the position of their first;
    none takes a node with a planned destination (Builder.destinations: a cat's channels, stride-1
    padded planes) or one reading such a node's output, but for a stride-2 reader's phases read by
    the chain's next layer (_chained)."""
    found: dict[int, Chain] = {}
    outside = set(out_slots)
    current: Chain | None = None
    weights = 0
    for position, node in enumerate(nodes):
        if node.op == "prim::Constant":
            continue
        layer = _layer(node, executor, recorded) if _chained(destinations.get(id(node))) else None
        continues = current is not None and layer is not None and layer[0] is current.nodes[-1].outputs[0] and \
            only_reader(layer[0], node, executor.slot_of, outside) and \
            _image_bytes(recorded[layer[0]]) <= IMAGE_BYTES and weights + layer[1] <= WEIGHT_BYTES
        if layer is not None and layer[0].node is not None and id(layer[0].node) in destinations and \
                not (continues and _chained(destinations[id(layer[0].node)])):
            layer, continues = None, False  # (it reads padded planes in place: padded_planes.py)
        if continues:
            current.positions.append(position)
            current.nodes.append(node)
            current.in_place = layer[2]
            weights += layer[1]
            continue
        if current is not None and len(current.nodes) > 1:
            found[current.positions[0]] = current
        current, weights = (Chain([position], [node], layer[0], layer[2]), layer[1]) if layer is not None else \
            (None, 0)
    if current is not None and len(current.nodes) > 1:
        found[current.positions[0]] = current
    return found


def _chained(destination) -> bool:
    """Whether a node with this planned destination (or None) may be a chain's layer: none, or a
    stride-2 reader's phases (padded_planes.PhaseLayout), which the chain's next layer then reads (an
    image's, in the chain's scratch) - or, where the producer ends the chain, lower_chain's
    ImageSlot replaces, its reader reading the batch's output."""
    return destination is None or isinstance(destination, PaddedPlanes) and destination.phases is not None


def _layer(node, executor, recorded) -> tuple | None:
    """(the value it convolves, its weights' bytes, whether it writes its output where it is asked:
    convolution_lowering.ImageSlot) of a convolution that runs its batch image by image and gives
    one output of the batch's images, each from its own image alone: a conv2d, or a FusionGroup
    headed by one whose other inputs are constants and whose kernel, if one runs after the head,
    reduces or normalizes no dim but the image's (the small CNN's global average pool); None for
    any other node."""
    if len(node.outputs) != 1:
        return None
    in_place = True
    if node.op == "conv2d":
        x, args = node.inputs[0], [recorded[v] for v in node.inputs]
    elif node.op == "prim::FusionGroup":
        found = executor.group_step_of[id(node)].variant_for([recorded[v] for v in node.inputs])
        variant = found[0] if found is not None else None
        if variant is None or variant.head is None or variant.head.name != "conv2d":
            return None
        x = node.inputs[variant.head_sources[0][0]]
        constants = executor.constants
        if any(v is not x and executor.slot_of[id(v)] not in constants for v in node.inputs) or \
                not variant.head_is_result and not _images_apart(variant.spec, found[1]):
            return None
        args = [recorded[node.inputs[p]] if p is not None else c for p, c in variant.head_sources]
        in_place = variant.head_is_result
    else:
        return None
    x_value, weight, result = args[0], args[1], recorded[node.outputs[0]]
    if type(x_value) is not np.ndarray or type(weight) is not np.ndarray or type(result) is not np.ndarray or \
            x_value.ndim != 4 or weight.ndim != 4 or result.ndim != 4 or x_value.dtype != weight.dtype or \
            not x_value.shape[0] or result.shape[0] != x_value.shape[0]:
        return None
    stride, padding, dilation, groups = args[3:7]
    geometry = conv_geometry(x_value.shape, weight.shape, stride, padding, dilation, groups)
    if geometry is None or geometry[6] * geometry[7] <= 1 or not image_by_image(x_value.shape, weight, geometry, groups):
        return None  # (a plane of one position: kernels.conv2d may multiply the batch as one product)
    return x, weight.nbytes, in_place


def _images_apart(spec, shape) -> bool:
    """Whether a group's kernel (after its convolution head) keeps the images apart: over a 4-D
    iteration `shape`, pointwise or reducing/normalizing dims of an image only (never the batch's
    dim 0)."""
    tail = spec.tail
    if len(shape) != 4 or spec.notes.get("then") is not None:
        return False
    if tail is None:
        return True
    merge = spec.notes.get("merge")
    spanned = range(merge[0], merge[1] + 1) if merge else [3 if tail.dim is None else tail.dim]
    return 0 not in spanned


def _image_bytes(batch: np.ndarray) -> int:
    """The bytes of one image of a layer's output (a batch _layer checked)."""
    return batch.nbytes // batch.shape[0]


def lower_chain(builder: Builder, chain: Chain, syms: dict, slot_of: dict, recorded, lower_node) -> None:
    """The chain's layers (each lowered by lower_node(node)) in a loop over the images of its input:
    the first reads one image of it, the last writes that image of the batch's output, and the
    layers' own buffers live through the whole loop."""
    source_slot, last = slot_of[id(chain.source)], chain.nodes[-1]
    x = dense(builder, syms[source_slot])
    start, end = chain.positions[0], chain.positions[-1]
    builder.position = start
    before = len(builder.buffers)
    result = recorded[last.outputs[0]]
    out = builder.alloc(result.dtype, [x.dims[0], *map(builder.const, result.shape[1:])])
    index, _, close = builder.batch_steps(x.dims[0], 1)
    image = builder.register()
    builder.compute.append(("ADDR", image, x.pointer, index, _image_bytes(recorded[chain.source])))
    syms[source_slot] = TensorValue(x.dtype, [native.ONE, *x.dims[1:]], image)
    if chain.in_place:
        builder.destinations[id(last)] = ImageSlot(out, index)
    for position, node in zip(chain.positions, chain.nodes):
        builder.position = position
        lower_node(node)
    builder.destinations.pop(id(last), None)
    written = syms[slot_of[id(last.outputs[0])]]
    if not chain.in_place:  # (its kernel's output, an image's: copied to its place in the batch's)
        if written.strides is not None or written.dtype != out.dtype:
            raise NotNative("a depth-first chain whose last layer gave a view")
        for d, size in zip(written.dims, (1, *result.shape[1:])):
            builder.equal(d, builder.const(size))
        image_bytes = _image_bytes(result)
        target = builder.register()
        builder.compute.append(("ADDR", target, out.pointer, index, image_bytes))
        builder.compute.append(("COPY", target, written.pointer, builder.const(image_bytes)))
    elif written.buffer is not out.buffer:
        raise NotNative("a depth-first chain whose last layer wrote elsewhere than its image of the batch")
    close()
    syms[source_slot] = x
    syms[slot_of[id(last.outputs[0])]] = out
    for buffer in builder.buffers[before:] + ([x.buffer] if x.buffer is not None else []):
        buffer.born, buffer.dies = min(buffer.born, start), max(buffer.dies, end)
