"""Convolutions that write their output straight into the padded planes their one reader, a stride-1
convolution's tap products, multiplies, or into a stride-2 reader's phases (runtime/padded_planes.py), against the reference
interpreter: chains of them, and every case where the planes must not be written so or must not be
read in place (another reader, a segment output, another padding, another stride, a kernel of
another size)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.native.heads import gemm_runs
from scriptc.runtime import convolution_lowering, depth_first, padded_planes
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep

pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the tap products need the compiled GEMM")
nn = torch.nn


class _Chain(nn.Module):
    """conv -> ReLU -> conv [-> ReLU6 -> conv], each (out channels, kernel, padding, stride)."""

    def __init__(self, channels, layers):
        super().__init__()
        convs = []
        for out, kernel, padding, stride in layers:
            convs.append(nn.Conv2d(channels, out, kernel, padding=padding, stride=stride))
            channels = out
        self.convs = nn.ModuleList(convs)

    def forward(self, x):
        for k, conv in enumerate(self.convs):
            x = conv(x)
            if k < len(self.convs) - 1:
                x = torch.relu(x) if k % 2 == 0 else torch.clamp(x, 0.0, 6.0)
        return x


class _ReadTwice(nn.Module):
    """A convolution's output read by the next convolution and by an add, or returned too."""

    def __init__(self, returned: bool):
        super().__init__()
        self.returned = returned
        self.first, self.second = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.first(x))
        return (self.second(y), y) if self.returned else self.second(y) + y


def _run(model, image, dtype, monkeypatch):
    """(planes written, planes read in place) while the programs are written; the compiled results at
    batches 2, 1 and 5 checked against the interpreter's."""
    written, read = [], []
    view, holding = padded_planes.PaddedPlanes.view, convolution_lowering.holding

    def spied_view(self, *args):
        result = view(self, *args)
        written.append(result is not None)
        return result

    def spied_holding(*args):
        found = holding(*args)
        read.append(found is not None)
        return found
    monkeypatch.setattr(padded_planes.PaddedPlanes, "view", spied_view)
    monkeypatch.setattr(convolution_lowering, "holding", spied_holding)
    torch.manual_seed(5)
    model = model.eval() if dtype == np.float32 else model.double().eval()
    example = torch.from_numpy(np.ones((2, 3, *image), dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(6)
    for batch in (2, 1, 5):
        x = rng.standard_normal((batch, 3, *image)).astype(dtype)
        for got, expected in zip(_flat(executor([x])), _flat(reference.run([x]))):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert all(all(s.programs.values()) for s in executor.steps if isinstance(s, SegmentStep))
    return sum(written), sum(read)


def _flat(outputs) -> list:
    return [a for item in outputs for a in (_flat(item) if isinstance(item, (list, tuple)) else [item])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layers, image, planes", [
    ([(8, 3, 1, 1), (8, 3, 1, 1), (5, 3, 1, 1)], (12, 12), 2),  # a chain: each output the next one's planes
    ([(8, 5, 2, 1), (6, 5, 2, 1)], (11, 13), 1),                 # padding 2, odd sizes
    ([(8, 3, 1, 1), (6, 5, 1, 1)], (24, 20), 1),                 # a larger kernel of the same padding
    ([(8, 3, 1, 1), (6, 3, 2, 1)], (12, 12), 0),                 # another padding: copied to its phase
    ([(8, 3, 1, 1), (6, 3, 1, 2)], (12, 12), 0),                 # a strided reader too small for taps
    ([(8, 3, 1, 1), (6, 3, 1, 2)], (16, 18), 1),                 # a stride-2 reader: its phases written
    ([(8, 5, 2, 1), (6, 5, 2, 2)], (16, 16), 1),                 # the same at padding 2
    ([(8, 5, 2, 1), (6, 3, 1, 2)], (16, 20), 0),                 # phases of rows the producer's are not
    ([(8, 3, 1, 1), (6, 3, 1, 2)], (17, 16), 0),                 # an odd image: phases of unequal rows
    ([(8, 3, 0, 1), (6, 3, 1, 1)], (12, 12), 0),                 # a producer that shrinks the image
    ([(8, 4, 1, 2), (6, 4, 1, 2)], (32, 32), 0),                 # a stride-2 producer: its reader copies
    # a producer reading planes in place splits no phases of its own: its stride-2 reader copies them
    ([(8, 3, 1, 1), (8, 3, 1, 1), (6, 3, 1, 2)], (16, 16), 1),
])
def test_padded_planes_equal_the_interpreter(layers, image, planes, dtype, monkeypatch):
    written, read = _run(_Chain(3, layers), image, dtype, monkeypatch)
    assert (written, read) == (planes, planes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_phases_of_a_whole_batch_equal_the_interpreter(dtype, monkeypatch):
    """Outside a depth-first chain (none formed: depth_first.IMAGE_BYTES 0) the producer writes the
    whole batch's phases."""
    monkeypatch.setattr(depth_first, "IMAGE_BYTES", 0)
    assert _run(_Chain(3, [(8, 3, 1, 1), (6, 3, 1, 2)]), (32, 32), dtype, monkeypatch) == (1, 1)


@pytest.mark.parametrize("returned", [False, True])
def test_an_output_read_elsewhere_keeps_its_own_buffer(returned, monkeypatch):
    assert _run(_ReadTwice(returned), (12, 12), np.float32, monkeypatch) == (0, 0)


def test_planes_a_reader_cannot_read_in_place_are_copied(monkeypatch):
    """Where the reader's lowering finds the planes are not its phase after all, it multiplies a
    contiguous copy of their values."""
    monkeypatch.setattr(convolution_lowering, "reads_in_place", lambda *args: False)
    assert _run(_Chain(3, [(8, 3, 1, 1), (6, 3, 1, 1)]), (12, 12), np.float32, monkeypatch) == (1, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_phases_written_by_the_producer_give_the_bits_of_the_copied_phases(dtype, monkeypatch):
    """A stride-2 reader multiplying the phases its producer wrote (PhaseLayout) gives the bits of
    the program in which it copies them itself, at batches the program was not built for."""
    layers, image = [(8, 3, 1, 1), (6, 3, 1, 2)], (18, 16)
    def executor(phases: bool):
        with monkeypatch.context() as patch:
            if not phases:
                patch.setattr(padded_planes.PhaseLayout, "passes", lambda self: None)
            torch.manual_seed(3)
            model = _Chain(3, layers).eval()
            model = model if dtype == np.float32 else model.double()
            example = torch.from_numpy(np.ones((2, 3, *image), dtype))
            graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
            compiled = Executor(graph, threads=2)
            compiled([example.numpy()])
            return compiled
    written, copied = executor(True), executor(False)
    rng = np.random.default_rng(4)
    for batch in (1, 3, 4):
        x = rng.standard_normal((batch, 3, *image)).astype(dtype)
        np.testing.assert_array_equal(written([x])[0], copied([x])[0])


def test_phases_a_reader_cannot_multiply_in_place_are_not_read_as_a_tensor(monkeypatch):
    """Phases are no strided view of the output: where the reader's lowering finds it cannot multiply
    them in place, the program is not built so (the results still the interpreter's)."""
    monkeypatch.setattr(convolution_lowering, "reads_in_place", lambda *args: False)
    model = _Chain(3, [(8, 3, 1, 1), (6, 3, 1, 2)]).eval()
    example = torch.from_numpy(np.ones((2, 3, 16, 16), np.float32))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    x = np.random.default_rng(2).standard_normal((3, 3, 16, 16)).astype(np.float32)
    executor = Executor(graph, threads=2)
    np.testing.assert_allclose(executor([x])[0], Interpreter(graph).run([x])[0], rtol=1e-5, atol=1e-5)
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.reason == "phases a stride-2 convolution cannot multiply in place"
