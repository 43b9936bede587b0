"""Cats planned in a segment's memory (runtime/program_memory.plan_concatenations): convolutions write
their outputs straight into their channels of the cat's result, and the cat copies only the parts that
did not land there - against eager and the reference interpreter, at batch sizes not traced."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import program_builder, program_memory
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


class _Fire(torch.nn.Module):
    """SqueezeNet's Fire module; returns the cat and a reader of each of its channel slices."""

    def __init__(self, c, squeeze, e1, e3):
        super().__init__()
        self.squeeze = torch.nn.Conv2d(c, squeeze, 1)
        self.expand1x1 = torch.nn.Conv2d(squeeze, e1, 1)
        self.expand3x3 = torch.nn.Conv2d(squeeze, e3, 3, padding=1)
        self.e1 = e1

    def forward(self, x):
        x = torch.relu(self.squeeze(x))
        y = torch.cat([torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1)
        return y, y[:, :self.e1] * 2.0, y[:, self.e1:] + 1.0


class _AlsoRead(torch.nn.Module):
    """A cat whose first part is read elsewhere too (it must keep a buffer of its own)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(6, 8, 1)
        self.b = torch.nn.Conv2d(6, 5, 3, padding=1)

    def forward(self, x):
        a = torch.relu(self.a(x))
        y = torch.cat([a, torch.relu(self.b(x))], 1)
        return y * 3.0, a - 1.0


class _Declined(torch.nn.Module):
    """Parts whose producers cannot write in place: a depthwise convolution (its loops run the batch as
    one range of planes), a group that computes more after its convolution, then one that can."""

    def __init__(self):
        super().__init__()
        self.depthwise = torch.nn.Conv2d(6, 6, 3, padding=1, groups=6)
        self.more = torch.nn.Conv2d(6, 4, 1)
        self.plain = torch.nn.Conv2d(6, 7, 3, padding=1)

    def forward(self, x):
        h = self.more(x)
        return torch.cat([self.depthwise(x), torch.relu(h) + 0.5 * h, torch.relu(self.plain(x))], 1)


def _parts_in_place(monkeypatch, seed: int, model, channels: int, image: tuple, dtype=np.float32, **options) -> list:
    """After _check(model, ...) passes: per cat the programs built planned, its channel counts and
    the parts its producers wrote in place."""
    planned = []

    def spy(*args):
        destinations, concatenations = program_memory.plan_concatenations(*args)
        planned.extend(concatenations.values())
        return destinations, concatenations
    monkeypatch.setattr(program_builder, "plan_concatenations", spy)
    torch.manual_seed(seed)
    _check(model(), channels, image, dtype, **options)
    assert planned
    return [(c.channels, sorted(c.placed)) for c in planned]


def _flat(outputs) -> list:
    """A graph's outputs with a tuple's items in its place."""
    return [item for out in outputs for item in (out if isinstance(out, tuple) else (out,))]


def _check(model, channels: int, image: tuple, dtype, batches=(2, 1, 3, 5), scripted: bool = False):
    """Trace at batch 2 (or script, with no example); the executor's results equal the interpreter's
    and eager's at `batches`."""
    if dtype == np.float64:
        model = model.double()
    model = model.eval()
    example = torch.from_numpy(np.ones((2, channels, *image), dtype))
    compiled = torch.jit.script(model) if scripted else torch.jit.trace(model, example)
    graph = torch.jit.optimize_for_inference(compiled, jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    rng = np.random.default_rng(7)
    tolerance = 1e-5 if dtype == np.float32 else 1e-10
    for batch in batches:
        x = rng.standard_normal((batch, channels, *image)).astype(dtype)
        with torch.no_grad():
            eager = model(torch.from_numpy(x))
        results = [_flat(executor([x])), _flat(reference.run([x])), [t.numpy() for t in _flat([eager])]]
        assert len({len(r) for r in results}) == 1
        for ours, interpreted, expected in zip(*results):
            np.testing.assert_allclose(ours, interpreted, rtol=tolerance, atol=tolerance)
            np.testing.assert_allclose(ours, expected, rtol=tolerance, atol=tolerance)
    segments = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segments and all(s.programs and all(s.programs.values()) for s in segments), \
        [s.reason for s in segments]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image", [(15, 15), (16, 4), (7, 7), (3, 3)])
def test_a_fire_modules_convolutions_write_into_the_cat(image, dtype, monkeypatch):
    """Every way the convolutions run (bands, taps, side by side, the narrow product) writes its
    images into the cat's result, images sum(channels) planes apart."""
    planned = _parts_in_place(monkeypatch, 1, lambda: _Fire(24, 8, 16, 12), 24, image, dtype)
    assert planned == [([16, 12], [0, 1])] * len(planned)


def test_a_part_read_elsewhere_keeps_its_own_buffer(monkeypatch):
    planned = _parts_in_place(monkeypatch, 2, _AlsoRead, 6, (7, 7))
    assert all(placed == [1] for _, placed in planned)


class _Returned(_AlsoRead):
    """The first part is a result of the whole segment too."""

    def forward(self, x):
        a = torch.relu(self.a(x))
        return torch.cat([a, torch.relu(self.b(x))], 1), a


def test_a_part_the_caller_reads_keeps_its_own_buffer(monkeypatch):
    """Only the second part is written in place, and the cat's result (in the out arena) is right."""
    planned = _parts_in_place(monkeypatch, 3, _Returned, 6, (5, 5))
    assert all(placed == [1] for _, placed in planned)


def test_parts_whose_producers_decline_are_copied_into_the_planned_result(monkeypatch):
    planned = _parts_in_place(monkeypatch, 4, _Declined, 6, (6, 6))
    assert all(placed == [2] for _, placed in planned)


def test_a_scripted_fire_module_plans_its_cat_too(monkeypatch):
    planned = _parts_in_place(monkeypatch, 5, lambda: _Fire(10, 6, 8, 4), 10, (7, 7), batches=(3, 1, 2),
                              scripted=True)
    assert all(placed == [0, 1] for _, placed in planned)
