"""3x3 stride-1 convolutions multiplied by Winograd's F(2x2, 3x3) in a segment program
(runtime/winograd_products.py) against the reference interpreter, at batch sizes the program was not
traced with: alone, in chains that hand each other padded planes, after a producer of another
padding, into a cat's channels, heading a depth-first chain, each epilogue; the same bits at one
thread and two."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import scriptc as torch
from scriptc.native.heads import gemm_runs
from scriptc.runtime import depth_first, padded_planes, pool, winograd_products
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep
from scriptc.runtime.winograd_products import BAND_BYTES, band_rows

pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the transforms need the compiled GEMM's vectors")
nn = torch.nn


class _Chain(nn.Module):
    """A 5x5 (padding 2) convolution, then 3x3 ones of `widths` out channels, ReLU, ReLU6 and LeakyReLU
    between them in turn."""

    def __init__(self, widths):
        super().__init__()
        self.first = nn.Conv2d(3, 16, 5, padding=2)
        convs, channels = [], 16
        for out in widths:
            convs.append(nn.Conv2d(channels, out, 3, padding=1))
            channels = out
        self.convs = nn.ModuleList(convs)

    def forward(self, x):
        x = torch.relu(self.first(x))
        for k, conv in enumerate(self.convs):
            x = conv(x)
            x = (torch.relu(x), torch.clamp(x, 0.0, 6.0), nn.functional.leaky_relu(x, 0.1))[k % 3]
        return x


class _Fire(nn.Module):
    """SqueezeNet's Fire module: a 1x1 squeeze, then a 1x1 and a 3x3 expand concatenated."""

    def __init__(self):
        super().__init__()
        self.squeeze = nn.Conv2d(3, 16, 1)
        self.expand1, self.expand3 = nn.Conv2d(16, 8, 1), nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1(x)), torch.relu(self.expand3(x))], 1)


def _compiled(model, image, dtype, monkeypatch, threads=2, channels=3):
    """(executor, interpreter, how many convolutions multiplied so) for `model` traced at batch 2."""
    made = []
    original = winograd_products.WinogradProducts.__init__

    def spied(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)
    monkeypatch.setattr(winograd_products.WinogradProducts, "__init__", spied)
    torch.manual_seed(7)
    model = model.eval() if dtype == np.float32 else model.double().eval()
    example = torch.from_numpy(np.ones((2, channels, *image), dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    executor = Executor(graph, threads=threads)
    executor([np.ones((2, channels, *image), dtype)])
    assert all(all(s.programs.values()) for s in executor.steps if isinstance(s, SegmentStep))
    return executor, Interpreter(graph), len(made)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("widths, image, taken", [
    ([32, 40, 5], (4, 32), 2),       # the last one has too few output channels
    ([32, 48, 16, 32], (6, 64), 3),
    ([32], (5, 32), 0),              # an odd height: the tap products
])
def test_winograd_products_equal_the_interpreter(widths, image, taken, dtype, monkeypatch):
    written = []
    view = padded_planes.PaddedPlanes.view
    monkeypatch.setattr(padded_planes.PaddedPlanes, "view",
                        lambda self, *args: written.append(view(self, *args)) or written[-1])
    executor, reference, made = _compiled(_Chain(widths), image, dtype, monkeypatch)
    assert made == taken
    assert sum(w is not None for w in written) == len(widths) - 1  # each 3x3 layer's output the next one's planes
    rng = np.random.default_rng(8)
    for batch in (2, 1, 5):
        x = (2 * rng.standard_normal((batch, 3, *image))).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-4)


def test_a_winograd_convolution_writes_into_its_channels_of_a_cat(monkeypatch):
    executor, reference, made = _compiled(_Fire(), (4, 32), np.float32, monkeypatch)
    assert made == 1
    rng = np.random.default_rng(9)
    for batch in (2, 3):
        x = rng.standard_normal((batch, 3, 4, 32)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-4)


def test_a_winograd_convolution_heads_a_depth_first_chain(monkeypatch):
    """Run an image at a time (depth_first.py), its bands and scratch as layer at a time."""
    chains = []
    lower_chain = depth_first.lower_chain
    monkeypatch.setattr(depth_first, "lower_chain", lambda builder, chain, *args: chains.append(chain) or
                        lower_chain(builder, chain, *args))
    model = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 8, 1), nn.ReLU(),
                          nn.Conv2d(8, 8, 1))
    executor, reference, made = _compiled(model, (8, 64), np.float32, monkeypatch, channels=16)
    assert made == 1 and len(chains) == 1 and len(chains[0].nodes) == 3
    rng = np.random.default_rng(11)
    for batch in (3, 1):
        x = rng.standard_normal((batch, 16, 8, 64)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-4)


def test_one_thread_and_two_give_the_same_bits(monkeypatch):
    one = _compiled(_Chain([32, 16]), (8, 64), np.float32, monkeypatch, threads=1)[0]
    two = _compiled(_Chain([32, 16]), (8, 64), np.float32, monkeypatch, threads=2)[0]
    x = np.random.default_rng(10).standard_normal((3, 3, 8, 64)).astype(np.float32)
    np.testing.assert_array_equal(one([x])[0], two([x])[0])


@pytest.mark.skipif(pool._native is None, reason="the native workers run on Linux only")
def test_a_bands_16_gemms_are_one_hand_off_to_the_workers(monkeypatch):
    """A 64 -> 64 3x3 layer on 8x64 (one band an image): per image the phase copy, the input
    transform, the 16 GEMMs as one split (native/positions.py) and the output transform - at most 4
    hand-offs an image, where a split per GEMM made 18."""
    model = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
    executor, _, made = _compiled(model, (8, 64), np.float32, monkeypatch, channels=64)
    assert made == 1
    x = np.random.default_rng(12).standard_normal((3, 64, 8, 64)).astype(np.float32)
    posted = ctypes.c_int32.from_address(pool._native.blocks)
    before = posted.value
    executor([x])
    assert 3 <= posted.value - before <= 4 * 3


@pytest.mark.parametrize("tile_rows, columns, channels", [(32, 32, 64), (31, 32, 64), (3, 512, 512), (1, 16, 16)])
def test_bands_divide_the_tile_rows_and_stay_in_their_budget(tile_rows, columns, channels):
    rows = band_rows(tile_rows, columns, channels, 4)
    assert tile_rows % rows == 0
    assert rows == 1 or rows * 16 * channels * columns * 4 <= BAND_BYTES
