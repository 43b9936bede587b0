"""4x4 stride-2 convolutions and transposed convolutions multiplied by Winograd's F(2x2, 2x2) in a
segment program (runtime/winograd_phase_products.py) against the reference interpreter, at batch
sizes the program was not traced with (steps of fewer images than a step holds, several steps):
DCGAN's discriminator and generator shapes (BatchNorm and LeakyReLU or ReLU folded into the
epilogue), a bias and each bound, float64, into a cat's channels; the same bits at one thread and
two; which convolutions go this way; how many images a step holds."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import gemm
from scriptc.native.heads import gemm_runs
from scriptc.runtime import winograd_phase_products
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep
from scriptc.runtime.transposed_lowering import transposed_geometry

pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the transforms need the compiled GEMM's vectors")
nn = torch.nn


def _discriminator():
    """DCGAN's discriminator at 32x32, its middle layer narrower: the first 4x4 layer too few channels
    to go this way."""
    return nn.Sequential(
        nn.Conv2d(3, 64, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
        nn.Conv2d(64, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),
        nn.Conv2d(64, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),
        nn.Conv2d(64, 1, 4, 1, 0, bias=False), nn.Sigmoid())


class _Bounds(nn.Module):
    """Three 4x4 stride-2 convolutions with a bias, a ReLU, a ReLU6 and nothing after them."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(64, 64, 4, 2, 1), nn.Conv2d(64, 64, 4, 2, 1), nn.Conv2d(64, 40, 4, 2, 1)])

    def forward(self, x):
        x = torch.relu(self.convs[0](x))
        x = torch.clamp(self.convs[1](x), 0.0, 6.0)
        return self.convs[2](x)


class _Cat(nn.Module):
    def __init__(self):
        super().__init__()
        self.left, self.right = nn.Conv2d(64, 32, 4, 2, 1), nn.Conv2d(64, 8, 3, 2, 1)

    def forward(self, x):
        return torch.cat([torch.relu(self.left(x)), self.right(x)], 1)


def _compiled(model, shape, monkeypatch, dtype=np.float32, threads=2):
    """(executor, interpreter, how many convolutions multiplied so) for `model` traced at batch 2."""
    made = []
    original = winograd_phase_products.phase_products
    monkeypatch.setattr("scriptc.runtime.convolution_lowering.phase_products",
                        lambda *args: made.append(args) or original(*args))
    torch.manual_seed(3)
    model = model.eval() if dtype == np.float32 else model.double().eval()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.copy_(torch.randn(module.num_features).to(module.running_mean.dtype) * 0.2)
            module.running_var.copy_(torch.rand(module.num_features).to(module.running_var.dtype) + 0.5)
    example = torch.from_numpy(np.ones((2, *shape), dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    executor = Executor(graph, threads=threads)
    executor([np.ones((2, *shape), dtype)])
    assert all(all(s.programs.values()) for s in executor.steps if isinstance(s, SegmentStep))
    return executor, Interpreter(graph), len(made)


@pytest.mark.parametrize("model, shape, taken, dtype", [
    (_discriminator, (3, 32, 32), 2, np.float32),
    (_Bounds, (64, 16, 16), 3, np.float32),
    (_Bounds, (64, 16, 16), 3, np.float64),
    (_Cat, (64, 8, 8), 1, np.float32),
])
def test_phase_products_equal_the_interpreter(model, shape, taken, dtype, monkeypatch):
    executor, reference, made = _compiled(model(), shape, monkeypatch, dtype)
    assert made == taken
    rng = np.random.default_rng(4)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    for batch in (2, 1, 5, 17):
        x = rng.standard_normal((batch, *shape)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=tolerance, atol=tolerance)


def test_one_thread_and_two_give_the_same_bits(monkeypatch):
    model = _discriminator()
    one = _compiled(model, (3, 32, 32), monkeypatch, threads=1)[0]
    two = _compiled(model, (3, 32, 32), monkeypatch, threads=2)[0]
    x = np.random.default_rng(5).standard_normal((7, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(one([x])[0], two([x])[0])


@pytest.mark.parametrize("tiles, images", [(4, 12), (16, 3), (64, 1), (9, 6), (1, 16)])
def test_a_step_holds_the_fewest_images_that_fill_a_panel(tiles, images):
    assert winograd_phase_products.step_images(tiles, "float32") == images
    assert gemm.VECTORS * gemm.vector_columns("float32") == 48


class _Generator(nn.Module):
    """DCGAN's generator, narrower, from 2x4: transposed 4x4 stride-2 layers with BatchNorm and ReLU,
    the last one's 3 channels too few to go this way, then Tanh."""

    def __init__(self, bias=False):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(64, 64, 4, 2, 1, bias=bias), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 64, 4, 2, 1, bias=bias), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=bias), nn.Tanh())

    def forward(self, x):
        return self.main(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [False, True])
def test_transposed_phase_products_equal_the_interpreter(bias, dtype, monkeypatch):
    made = []
    original = winograd_phase_products.transposed_products
    monkeypatch.setattr("scriptc.runtime.transposed_lowering.transposed_products",
                        lambda *args: made.append(args) or original(*args))
    executor, reference, _ = _compiled(_Generator(bias), (64, 2, 4), monkeypatch, dtype)
    assert len(made) == 2
    rng = np.random.default_rng(6)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    for batch in (2, 1, 3, 13):
        x = rng.standard_normal((batch, 64, 2, 4)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("shape, weight_shape, arguments, taken", [
    ((2, 64, 4, 4), (64, 64, 4, 4), (2, 1, 0, 1, 1), True),
    ((2, 64, 8, 8), (64, 64, 4, 4), (2, 1, 0, 1, 1), True),
    ((2, 64, 16, 10), (64, 64, 4, 4), (2, 1, 0, 1, 1), True),
    ((2, 64, 5, 4), (64, 64, 4, 4), (2, 1, 0, 1, 1), False),    # an odd image
    ((2, 64, 4, 4), (64, 64, 4, 4), (2, 1, 1, 1, 1), False),    # output padding
    ((2, 32, 4, 4), (32, 64, 4, 4), (2, 1, 0, 1, 1), False),    # few input channels
    ((2, 64, 4, 4), (64, 32, 4, 4), (2, 1, 0, 1, 1), False),    # few output channels
    ((2, 64, 4, 4), (64, 64, 3, 3), (2, 1, 0, 1, 1), False),
    ((2, 64, 4, 4), (64, 64, 4, 4), (1, 1, 0, 1, 1), False),
    ((2, 64, 4, 4), (64, 32, 4, 4), (2, 1, 0, 2, 1), False),    # grouped
])
def test_transposed_takes_4x4_stride_2_of_even_images_and_enough_channels(shape, weight_shape, arguments, taken):
    stride, padding, output_padding, groups, dilation = arguments
    geometry = transposed_geometry(shape, weight_shape, stride, padding, output_padding, groups, dilation)
    assert winograd_phase_products.transposed_takes(shape, weight_shape, geometry, groups, np.float32) == taken
