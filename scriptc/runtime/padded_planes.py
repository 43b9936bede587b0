"""Convolution outputs written straight into the padded planes their one reader would copy them into.

A stride-1 convolution's tap products (tap_products.tap_products) first copy their input
into its phase: planes of HQ = H + 2 * PH rows of WQ = W + PW, the values from row PH, column PW
on, zeros around them (each row's PW leading zeros are also the row before's right padding). Where
that input is the output of another stride-1 convolution of the same size, whose own products run
over rows of the same WQ, and nothing else reads it, the producer writes it there itself: its tap
GEMM stores its rows of WQ whole, the columns past OW zeroed (the next row's left padding), from
row PH, column PW of each plane, and two records per image clear the padding rows around them; the
reader multiplies those planes in place. (super-res: the copies took 6% of its time, each layer's
output back from L3 by the time the next layer read it.)

A stride-2 reader's tap products copy their input into the stride's four phases instead (phase (i, j)
the padded planes' rows i, i + 2, ... and columns j, j + 2, ...). A same-size stride-1 producer of an
even image writes those (PhaseLayout): it splits its own input into stride-2 phases and multiplies
each phase of its output (its rows a, a + 2, ... and columns b, b + 2, ...) by one GEMM of its taps'
views of them, whose rows are the reader's phase rows (the small CNN's conv1 -> conv2: 0.90x the
model's time, A/B in one process). A producer that reads its own input in place (planes another
producer wrote) has no phases of its own to take views of: it writes its output as always, and its
reader copies it. Inside a depth-first chain (depth_first.py) those phases are an image's scratch,
read back from L2. (A stride-2 producer could write them too, from its input's stride-4 phases: for
DCGAN D's conv1 -> conv2 its four products, their 48 taps each in a plane of its own, ran 1.25x the
time of one product over stride-2 phases whose taps share cache lines - more than conv2's copy saves.)

The planning (convolution_lowering.plan_padded_planes) picks the producers whose one reader will
multiply so; the producer's lowering then decides whether its own geometry takes it
(PaddedPlanes.view; else it writes its output as always), and the reader's whether the planes match
its phase (holding; else it copies the view to a contiguous tensor, as it would any other view): a
mismatch costs a copy, never a wrong value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .program_values import Builder, TensorValue


@dataclass
class Layout:
    """Planes of `channels` images' values, H x W each, at row PH, column PW of planes HQ x WQ (HQ =
    H + 2 * PH, WQ = W + PW), images `image_elements` apart (the last plane followed by PH * WQ +
    PW zeros: what a tap's view reads past it)."""
    channels: int
    image: tuple[int, int]
    padding: tuple[int, int]

    @property
    def rows(self) -> tuple[int, int]:
        """(HQ, WQ)."""
        (h, w), (ph, pw) = self.image, self.padding
        return h + 2 * ph, w + pw

    @property
    def plane(self) -> int:
        return self.rows[0] * self.rows[1]

    @property
    def first(self) -> int:
        """Elements from a plane's start to its first value."""
        return self.padding[0] * self.rows[1] + self.padding[1]

    @property
    def image_elements(self) -> int:
        return self.channels * self.plane + self.first


@dataclass
class PhaseLayout:
    """A stride-2 reader's phases of `channels` planes H x W padded by (PH, PW) (tap_products.
    tap_plan): per channel its four phases of HQ x WQ one after another, phase (i, j) holding the
    padded planes' rows i, i + 2, ... and columns j, j + 2, ...; images `image_elements` apart, the
    last channel's phases followed by `slack` zeros (what a tap's view reads past them). A producer
    of the same H x W (both even) writes it a phase of its output at a time (its rows a, a + 2, ...
    and columns b, b + 2, ...): rows of WQ, the W/2 values then zeros, which are the padding at the
    row's end and the next row's start (`passes`)."""
    channels: int
    image: tuple[int, int]
    padding: tuple[int, int]
    rows: tuple[int, int]
    slack: int
    first = 0

    @property
    def plane(self) -> int:
        return self.rows[0] * self.rows[1]

    @property
    def image_elements(self) -> int:
        return self.channels * 4 * self.plane + self.slack

    def passes(self) -> tuple[list, list] | None:
        """([(a, b, where in a channel's phases the producer's output phase (a, b) starts)], the
        [first, end) ranges of a channel's phases no pass stores, which the producer clears), or None
        where the rows do not fit so: a pass's zeros would land on another's values, or past the
        slack after the last channel."""
        (h, w), (ph, pw), (hq, wq) = self.image, self.padding, self.rows
        span = 4 * self.plane
        starts, values, zeros, spilled = [], np.zeros(span, bool), np.zeros(span, bool), []
        for a in range(2):
            for b in range(2):
                start = (((a + ph) % 2 * 2 + (b + pw) % 2) * self.plane + (a + ph) // 2 * wq + (b + pw) // 2)
                stored = start + np.arange(h // 2)[:, None] * wq + np.arange(wq)
                if stored[-1, -1] >= span + self.slack or (a + ph) // 2 + h // 2 > hq:
                    return None
                values[stored[:, :w // 2]] = True
                zero = stored[:, w // 2:]
                zeros[zero[zero < span]] = True
                spilled.append(zero[zero >= span] - span)  # (onto the next channel's phases)
                starts.append((a, b, start))
        if (values & zeros).any() or values[np.concatenate(spilled)].any():
            return None
        cleared = np.flatnonzero(np.diff(np.concatenate([[0], ~(values | zeros), [0]]).astype(np.int8)))
        return starts, list(zip(cleared[::2].tolist(), cleared[1::2].tolist()))

    def taps(self, a: int, b: int, phases: tuple, kernel: tuple) -> np.ndarray:
        """Where the views of a producer's taps start for its output phase (a, b) (output (y, x) of
        that phase is its output (2y + a, 2x + b)), in its input's stride-2 `phases` (C, HQ, WQ): tap
        (c, ky, kx) reads input phase ((a + ky) % 2, (b + kx) % 2) from row y + (a + ky) // 2, column
        x + (b + kx) // 2."""
        c, hq, wq = phases
        kh, kw = kernel
        return np.array([(ci * 4 + (a + ky) % 2 * 2 + (b + kx) % 2) * hq * wq + (a + ky) // 2 * wq + (b + kx) // 2
                         for ci in range(c) for ky in range(kh) for kx in range(kw)], dtype=np.int64)

    def clear(self, builder: Builder, image_base: int, cleared: list, itemsize: int) -> None:
        """Records zeroing the `cleared` ranges (passes()) of each channel's phases of one image (its
        phases start at register image_base) and the slack after them."""
        const, span = builder.const, 4 * self.plane
        zeros = builder.address_of(np.zeros(max(end - first for first, end in cleared) * itemsize, np.uint8))
        for first, end in cleared:
            at = builder.register()
            builder.compute.append(("ADDR", at, image_base, const(first), itemsize))
            builder.compute.append(("COPY2D", at, const(span * itemsize), zeros, const(0), const(self.channels),
                                    const((end - first) * itemsize)))
        tail = builder.register()
        builder.compute.append(("ADDR", tail, image_base, const(self.channels * span), itemsize))
        builder.compute.append(("ZERO", tail, const(self.slack * itemsize)))


@dataclass
class PaddedPlanes:
    """A producer's destination (Builder.destinations): the view of the planes it wrote its output
    into, where it did."""
    reader_padding: tuple[int, int]  # the reader's (PH, PW): the producer's own must be the same
    values: TensorValue | None = None
    base: int = 0               # register: the address of the first image's planes
    layout: Layout | PhaseLayout | None = None
    phases: PhaseLayout | None = None  # a stride-2 reader's phases (its planned layout)

    def view(self, builder: Builder, batch: int, dtype, planes: tuple) -> TensorValue | None:
        """The producer's output, `batch` (a register) images of `planes` (channels, height, width),
        as a view of padded planes of its layout (set by the producer's lowering), allocated here;
        None where the planes are not the layout's (as a cat's Destination.view)."""
        layout, const = self.layout, builder.const
        if layout is None or tuple(planes) != (layout.channels, *layout.image):
            return None
        allocated = builder.alloc(dtype, [batch, const(layout.image_elements)])
        pointer = builder.register()
        builder.compute.append(("ADDR", pointer, allocated.pointer, const(layout.first), dtype.itemsize))
        wq = layout.rows[1]
        self.values = TensorValue(dtype, [batch, const(layout.channels), *map(const, layout.image)], pointer,
                                  allocated.buffer, [const(layout.image_elements), const(layout.plane), const(wq),
                                                     const(1)])
        self.base = allocated.pointer
        return self.values

    def clear_padding(self, builder: Builder, image_base: int, itemsize: int) -> None:
        """Records zeroing one image's padding rows (the image's planes start at register
        image_base); its padding columns are the zeroed columns its GEMM stores."""
        layout, const = self.layout, builder.const
        (h, _), (ph, _) = layout.image, layout.padding
        wq = layout.rows[1]
        builder.compute.append(("ZERO", image_base, const(layout.first * itemsize)))
        # each plane's last padding rows and the next one's first (or the zeros after the last plane)
        after = builder.register()
        builder.compute.append(("ADDR", after, image_base, const((ph + h) * wq + layout.padding[1]), itemsize))
        zeros = builder.address_of(np.zeros(2 * ph * wq * itemsize, np.uint8))
        builder.compute.append(("COPY2D", after, const(layout.plane * itemsize), zeros, const(0),
                                const(layout.channels), const(2 * ph * wq * itemsize)))


def holding(builder: Builder, value) -> PaddedPlanes | None:
    """The PaddedPlanes whose view `value` is, if a producer wrote it so."""
    return next((d for d in builder.destinations.values() if isinstance(d, PaddedPlanes) and d.values is value),
                None)


def convolution_of(node):
    """A conv2d node, or the conv2d heading a FusionGroup; None for anything else."""
    if node.op == "prim::FusionGroup":
        node = next((n for n in node.blocks[0] if n.op != "prim::Constant"), None)
    return node if node is not None and node.op == "conv2d" else None


def reads_as_image(reader, index: int) -> bool:
    """Whether `reader`'s input `index` is its convolution's image and nothing else of it reads it."""
    convolution = convolution_of(reader)
    if convolution is None:
        return False
    if convolution is reader:
        return index == 0
    uses = list(reader.blocks[0].params[index].uses)
    return len(uses) == 1 and uses[0].user is convolution and uses[0].index == 0


def argument(reader, index: int):
    """The constant value of argument `index` of the convolution of `reader` (a conv2d node, or a
    FusionGroup headed by one: its own input where the argument is one), or None."""
    convolution = convolution_of(reader)
    value = convolution.inputs[index]
    if value.node is None and convolution is not reader:
        value = next((reader.inputs[k] for k, param in enumerate(reader.blocks[0].params) if param is value), value)
    if value.node is None or value.node.op != "prim::Constant":
        return None
    found = value.node.attrs.get("value")
    return list(found) if isinstance(found, tuple) else found
