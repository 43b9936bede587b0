"""Depth-first chains of convolutions in a segment program (runtime/depth_first.py): the same bits as
the layer-at-a-time program at batch sizes the program was not built for, and chains only where each
layer feeds the next alone and keeps the images apart."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import depth_first
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


class _Strided(torch.nn.Module):
    """The small CNN's shape: a 3x3, a strided 3x3 whose group ends in the global average pool."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.second = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 5)

    def forward(self, x):
        h = torch.relu(self.second(torch.relu(self.first(x))))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(h, 1), 1))


class _Inverted(torch.nn.Module):
    """A 4x4 strided LeakyReLU layer whose output a residual add reads too, then the chain: a 1x1
    expand and a depthwise 3x3 (its last, writing its image of the batch's output itself); the
    project's group, which adds the residual, is not the chain's."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 6, 4, 2, 1)
        self.expand = torch.nn.Conv2d(6, 24, 1)
        self.depthwise = torch.nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.project = torch.nn.Conv2d(24, 6, 1)

    def forward(self, x):
        h = torch.nn.functional.leaky_relu(self.stem(x), 0.2)
        d = torch.nn.functional.relu6(self.depthwise(torch.nn.functional.relu6(self.expand(h))))
        return h + self.project(d)


class _Shared(torch.nn.Module):
    """A convolution whose output two layers read, and one whose only reader's group averages over
    the batch (keeping its dim: a batch of one, its mean, has the shape a chain's output would):
    neither is a chain's."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.left = torch.nn.Conv2d(8, 4, 3, padding=1)
        self.right = torch.nn.Conv2d(8, 4, 1)
        self.other = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.summed = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.first(x))
        mean = torch.relu(self.summed(torch.relu(self.other(x)))).mean(0, keepdim=True)
        return self.left(h) + self.right(h) + mean


class _Padded(torch.nn.Module):
    """Two stride-1 3x3 layers: the first writes the padded planes the second multiplies in place
    (padded_planes.py), which a chain does not take."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.second = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.second(torch.relu(self.first(x))))


def _executor(model, image, monkeypatch, depth_first_on: bool, batch: int = 2):
    """A compiled executor of `model` traced at `batch`, its program built with or without chains;
    the reference interpreter; the chains it lowered (their nodes' ops)."""
    lowered = []
    lower_chain = depth_first.lower_chain

    def recording(builder, chain, *args):
        lowered.append([node.op for node in chain.nodes])
        return lower_chain(builder, chain, *args)

    example = torch.randn(batch, 3, *image)
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    executor = Executor(graph, threads=2)
    with monkeypatch.context() as patch:
        patch.setattr(depth_first, "lower_chain", recording)
        if not depth_first_on:
            patch.setattr(depth_first, "IMAGE_BYTES", -1)
        executor([example.numpy()])  # (the program is built on this call)
    return executor, Interpreter(graph), lowered


@pytest.mark.parametrize("model, image, chain", [
    (_Strided, (20, 18), ["prim::FusionGroup", "prim::FusionGroup"]),
    (_Inverted, (16, 16), ["prim::FusionGroup", "prim::FusionGroup"]),
])
def test_a_chain_gives_the_bits_of_the_layer_at_a_time_program(model, image, chain, monkeypatch):
    torch.manual_seed(7)
    module = model()
    chained, reference, lowered = _executor(module, image, monkeypatch, True)
    layered, _, none = _executor(module, image, monkeypatch, False)
    assert lowered == [chain] and none == []
    rng = np.random.default_rng(9)
    for batch in (2, 1, 3, 5):
        x = rng.standard_normal((batch, 3, *image)).astype(np.float32)
        got = chained([x])[0]
        np.testing.assert_array_equal(got, layered([x])[0])
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-4, atol=1e-5)
    for executor in (chained, layered):
        [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
        assert segment.programs and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("model, image", [(_Shared, (12, 12)), (_Padded, (16, 16))])
def test_a_layer_read_twice_a_mean_over_the_batch_or_padded_planes_make_no_chain(model, image, monkeypatch):
    torch.manual_seed(8)
    executor, reference, lowered = _executor(model(), image, monkeypatch, True, batch=1)
    assert lowered == []
    x = np.random.default_rng(10).standard_normal((3, 3, *image)).astype(np.float32)
    np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-3)
