"""A segment program's convolutions (runtime/convolution_lowering.py) against the reference
interpreter: the tap products (no im2col: one GEMM over shifted views of the padded image's phases),
and whole small convolutional nets through every kernel - 3x3, strided, 1x1, depthwise, pooling,
BatchNorm folded, residual adds, the global-pool head."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import blocked_depthwise, blocked_pool
from scriptc.native.geometry import conv_geometry, pool_geometry
from scriptc.ops import linalg
from scriptc.runtime import convolution_lowering, pool, tap_products
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep

TAP_CASES = [  # (in channels, image), (out channels, kernel), stride, padding, dilation
    ((3, (9, 9)), (5, (3, 3)), 1, 1, 1),
    ((4, (10, 7)), (6, (3, 3)), 2, 1, 1),     # stride 2, an odd width: phases of unequal sizes
    ((2, (11, 12)), (3, (5, 5)), 1, 4, 2),    # dilation
    ((3, (13, 13)), (4, (7, 7)), 2, 3, 1),    # ResNet's stem
    ((3, (8, 9)), (2, (2, 3)), (1, 2), (0, 1), 1),
    ((2, (9, 9)), (3, (3, 3)), 3, 0, 1),      # stride 3, no padding
    ((5, (6, 6)), (4, (1, 1)), 2, 0, 1),      # a strided 1x1
    ((2, (7, 8)), (3, (3, 3)), 1, (2, 1), 1),  # rows WQ = W + PW long: one run of zeros between rows
    ((2, (7, 8)), (3, (3, 3)), 1, (0, 1), 1),  # no padding rows: past a plane, the next one's padding
    ((2, (6, 7)), (3, (1, 3)), 1, (1, 3), 1),  # padded wider than the window reaches: both paddings
]


def _image_columns(x, geometry, kernel):
    """Per image, the taps' rows over outputs of rows WQ long (what the tap GEMM multiplies),
    gathered with tap_plan's offsets from the padded image's phases made in numpy."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    n, c, h, w = x.shape
    hq, wq, offsets = tap_products.tap_plan((c, h, w), (1, c, *kernel), geometry)
    padded = np.zeros((n, c, hq * sh, wq * sw), x.dtype)
    padded[:, :, ph:ph + h, pw:pw + w] = x
    phases = padded.reshape(n, c, hq, sh, wq, sw).transpose(0, 1, 3, 5, 2, 4).reshape(n, -1)
    phases = np.concatenate([phases, np.zeros((n, wq * sw + kernel[1] * dw), x.dtype)], axis=1)
    return np.stack([phases[:, o:o + oh * wq] for o in offsets], axis=1).reshape(n, len(offsets), oh, wq)


@pytest.mark.parametrize("case", TAP_CASES)
def test_the_tap_offsets_read_what_im2col_copies(case):
    (c, image), (o, kernel), stride, padding, dilation = case
    x = np.random.default_rng(0).standard_normal((2, c, *image))
    w = np.zeros((o, c, *kernel))
    geometry = conv_geometry(x.shape, w.shape, stride, padding, dilation, 1)
    oh, ow = geometry[-2:]
    taps = _image_columns(x, geometry, kernel)[..., :ow]  # (the columns past OW are cut away)
    expected = linalg._im2col(np, x, w, *geometry, 1)
    np.testing.assert_array_equal(taps.reshape(expected.shape), expected)


class _Conv(torch.nn.Module):
    def __init__(self, c, o, kernel, stride, padding, dilation):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, o, kernel, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        h = self.conv(x)
        return torch.relu(h) + 0.5 * h


def _executors(model, example):
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    return Executor(graph, threads=2), Interpreter(graph)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TAP_CASES)
def test_tap_products_equal_the_interpreter(case, dtype, monkeypatch):
    monkeypatch.setattr(tap_products, "TAP_MIN_POSITIONS", 0)
    monkeypatch.setattr(tap_products, "TAP_WIDTH_RATIO", (100, 1))  # every convolution by taps
    (c, image), (o, kernel), stride, padding, dilation = case
    torch.manual_seed(3)
    model = _Conv(c, o, kernel, stride, padding, dilation)
    if dtype == np.float64:
        model = model.double()
    example = torch.from_numpy(np.ones((2, c, *image), dtype))
    executor, reference = _executors(model, example)
    rng = np.random.default_rng(4)
    for batch in (2, 1, 5):
        x = rng.standard_normal((batch, c, *image)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    # a transposed (non-contiguous) input: the steps run it, with the same results
    x = rng.standard_normal((2, c, image[1], image[0])).astype(dtype).transpose(0, 1, 3, 2)
    np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("side_by_side", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, bias", [((2, 2), True), ((1, 1), False), ((2, 3), True), ((3, 3), True)])
def test_narrow_products_equal_the_interpreter(image, bias, dtype, side_by_side, monkeypatch):
    """Convolutions of planes of a few positions (the narrow product): a 1x1 of 40 channels out (two
    vectors of rows and a partial one), a 3x3 over im2col's columns; image by image, or (under
    weights counted as large) several images side by side in its columns."""
    if side_by_side:
        monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Conv2d(24, 40, 1, bias=bias), torch.nn.ReLU(),
                                torch.nn.Conv2d(40, 20, 3, padding=1, bias=bias))
    if dtype == np.float64:
        model = model.double()
    executor, reference = _executors(model, torch.from_numpy(np.ones((2, 24, *image), dtype)))
    rng = np.random.default_rng(5)
    for batch in (2, 1, 3, 5):
        x = rng.standard_normal((batch, 24, *image)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("way", ["bands", "side by side"])
def test_stride_2_columns_equal_the_interpreter(way, dtype, monkeypatch):
    """Strided convolutions whose columns strided_columns.py copies (rows of 10 outputs in float32's
    vectors, of 5 in float64's; the other layer's by im2col.py), banded or images side by side."""
    monkeypatch.setattr(tap_products, "TAP_MIN_POSITIONS", 1 << 30)
    if way == "side by side":
        monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    torch.manual_seed(10)
    model = torch.nn.Sequential(torch.nn.Conv2d(5, 8, 4, 2, 1), torch.nn.LeakyReLU(0.2),
                                torch.nn.Conv2d(8, 6, 3, 2, 1, bias=False), torch.nn.ReLU())
    if dtype == np.float64:
        model = model.double()
    executor, reference = _executors(model, torch.from_numpy(np.ones((2, 5, 20, 20), dtype)))
    rng = np.random.default_rng(12)
    for batch in (2, 1, 3):
        x = rng.standard_normal((batch, 5, 20, 20)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_side_by_side_columns_past_the_last_whole_vector_equal_the_interpreter(dtype, bias):
    """Images side by side on 7x7 planes (49 columns each) under 64 x 288 weights: the columns past
    the GEMM's last whole vector go by the narrow product where they are few (a batch of 1, 2, 3, 5:
    1, 2, 3, 5 of them in float32's vectors), by the GEMM's masked vector where they are more (9
    images: 9), none at 16 images."""
    assert convolution_lowering.splits_tail(64, 288, 64 * 288 * 4)
    assert not convolution_lowering.splits_tail(32, 288, 32 * 288 * 4)
    torch.manual_seed(6)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1, bias=bias), torch.nn.ReLU())
    if dtype == np.float64:
        model = model.double()
    executor, reference = _executors(model, torch.from_numpy(np.ones((2, 32, 7, 7), dtype)))
    rng = np.random.default_rng(7)
    for batch in (2, 1, 3, 5, 9, 16):
        x = rng.standard_normal((batch, 32, 7, 7)).astype(dtype)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


def test_images_side_by_side_fill_whole_panels_of_the_gemm():
    """DCGAN D's conv4 at an odd image (9x9, which Winograd's phase products leave: 16 positions an
    image, 8 MB of weights) goes 3 images a group at one thread: one panel of 48 columns, where 4
    would part-fill a second one; at two threads (a panel each would take 6 images, more than
    GROUP_BYTES holds) and where no count fills panels, as many images as GROUP_BYTES holds."""
    weight = np.zeros((512, 256, 4, 4), np.float32)
    geometry = conv_geometry((16, 256, 9, 9), weight.shape, 2, 1, 1, 1)
    assert convolution_lowering._products((16, 256, 9, 9), np.float32, weight, geometry, 1)[1:3] == (True, 3)
    assert convolution_lowering._products((16, 256, 9, 9), np.float32, weight, geometry, 1, 2)[1:3] == (True, 4)
    weight = np.zeros((256, 128, 4, 4), np.float32)  # conv3's: 64 positions, two images' 1 MB of columns
    geometry = conv_geometry((16, 128, 17, 17), weight.shape, 2, 1, 1, 1)
    assert convolution_lowering._products((16, 128, 17, 17), np.float32, weight, geometry, 1)[1:3] == (True, 2)


def test_narrow_products_take_images_side_by_side_only_while_the_tile_keeps_two_vectors_of_rows():
    """SqueezeNet's classifier (1000 x 512 weights over 3x3 planes): two images side by side would be
    18 columns, a tile of one vector of rows, so its images go one at a time; 2x2 planes go 3 at a
    time (12 columns, two vectors of rows), 1x1 planes 12."""
    weight = np.zeros((1000, 512, 1, 1), np.float32)
    for size, expected in ((3, (False, 1)), (2, (True, 3)), (1, (True, 12))):
        geometry = conv_geometry((16, 512, size, size), weight.shape, 1, 0, 1, 1)
        depthwise, grouped, images, narrow = convolution_lowering._products(
            (16, 512, size, size), np.float32, weight, geometry, 1)[:4]
        assert narrow and (grouped, images) == expected, size


def test_dcgan_discriminators_4x4_stride_2_layers_go_by_winograds_phase_products():
    """Its conv2-conv4 (not conv1: 12 phase channels); neither side by side nor a tap plan, and not
    image by image (a step multiplies several images' tiles together)."""
    for (c, o, size), taken in (((3, 64, 64), False), ((64, 128, 32), True), ((128, 256, 16), True),
                                ((256, 512, 8), True)):
        weight = np.zeros((o, c, 4, 4), np.float32)
        geometry = conv_geometry((16, c, size, size), weight.shape, 2, 1, 1, 1)
        found = convolution_lowering._products((16, c, size, size), np.float32, weight, geometry, 1)
        assert found[5] == taken
        assert not taken or (found[1], found[4]) == (False, None)
        assert convolution_lowering.image_by_image((16, c, size, size), weight, geometry, 1) != taken


@pytest.mark.parametrize("columns, itemsize, stride", [(128, 4, 144), (48, 4, 48), (98, 4, 112), (16, 4, 16),
                                                     (48, 8, 56), (1, 8, 8), (32, 4, 48)])
def test_side_by_side_rows_are_an_odd_number_of_cache_lines_apart(columns, itemsize, stride):
    """DCGAN D's conv3 (two images of 64 positions: 128 columns, 8 lines) gets rows of 144, 9 lines."""
    assert convolution_lowering.row_stride(columns, itemsize) == stride
    assert stride >= columns and stride * itemsize % 64 == 0 and stride * itemsize // 64 % 2 == 1


def test_images_side_by_side_store_in_place_where_each_vector_is_one_images():
    """DCGAN D's conv3 (64 positions an image) and conv4 (16) multiply straight into their outputs;
    not planes of 49 positions (a vector holds two images' columns), nor weights the GEMM packs."""
    assert convolution_lowering.stores_in_place(256, 2048, 64, 144, "float32")
    assert convolution_lowering.stores_in_place(512, 4096, 16, 48, "float32")
    assert not convolution_lowering.stores_in_place(512, 4096, 49, 112, "float32")
    assert not convolution_lowering.stores_in_place(16, 72, 16, 48, "float32")  # (weights it packs)
    assert not convolution_lowering.stores_in_place(512, 4096, 16, 272, "float32")  # (rows it packs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_images_stored_in_place_give_the_bits_of_the_scratch_matrix(dtype, monkeypatch):
    """A 4x4-plane layer under 512 KB of weights (3 images a group at one thread, 4 at two; of a 9x9
    image, which Winograd's phase products leave), whose
    GEMM stores each image's vectors in its output: the interpreter's results, and the bits of the
    program that multiplies into a scratch matrix and copies it out, at batches the program was not
    built for, at one and two threads."""
    torch.manual_seed(15)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 128, 4, 2, 1), torch.nn.LeakyReLU(0.2)).eval()
    if dtype == np.float64:
        model = model.double()
    example = torch.from_numpy(np.ones((2, 64, 9, 9), dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    stored = []
    decide = convolution_lowering.stores_in_place
    monkeypatch.setattr(convolution_lowering, "stores_in_place", lambda *args: stored.append(decide(*args)) or
                        stored[-1])
    in_place = [Executor(graph, threads=threads) for threads in (1, 2)]
    for executor in in_place:
        executor([example.numpy()])
    monkeypatch.setattr(convolution_lowering, "stores_in_place", lambda *args: False)
    scratch = Executor(graph, threads=1)
    reference = Interpreter(graph)
    rng = np.random.default_rng(16)
    for batch in (1, 3, 4, 7):
        x = rng.standard_normal((batch, 64, 9, 9)).astype(dtype)
        np.testing.assert_allclose(in_place[0]([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(in_place[0]([x])[0], scratch([x])[0])
        np.testing.assert_array_equal(in_place[1]([x])[0], in_place[0]([x])[0])
    assert stored == [True, True]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_groups_of_whole_panels_equal_the_interpreter(dtype, monkeypatch):
    """Planes of 16 positions 3 images a group at one thread (of the 4 GROUP_BYTES holds), 4 at two:
    batches that fill the last group and ones that leave it one to three images."""
    monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    monkeypatch.setattr(convolution_lowering, "GROUP_BYTES", 4 * 8 * 16 * 16 * np.dtype(dtype).itemsize)
    torch.manual_seed(13)
    model = torch.nn.Sequential(torch.nn.Conv2d(8, 6, 4, 2, 1, bias=False), torch.nn.LeakyReLU(0.2))
    if dtype == np.float64:
        model = model.double()
    example = torch.from_numpy(np.ones((2, 8, 8, 8), dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    alone, split, reference = Executor(graph, threads=1), Executor(graph, threads=2), Interpreter(graph)
    for executor in (alone, split):  # (an executor's first call runs the steps, and writes its program down)
        executor([example.numpy()])
    rng = np.random.default_rng(14)
    for batch in (3, 1, 2, 4, 5, 7):
        x = rng.standard_normal((batch, 8, 8, 8)).astype(dtype)
        expected = reference.run([x])[0]
        np.testing.assert_allclose(alone([x])[0], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(split([x])[0], alone([x])[0])  # (each column's products the same)
    for executor in (alone, split):
        [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
        assert segment.programs and all(segment.programs.values()), segment.reason


class _Block(torch.nn.Module):
    """An inverted residual (1x1 expand, depthwise 3x3, 1x1 project, BatchNorm after each) beside a
    basic residual block (two 3x3 with BatchNorm, a strided 1x1 downsample)."""

    def __init__(self):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), bn(8),
                                        torch.nn.ReLU6())
        self.expand = torch.nn.Sequential(torch.nn.Conv2d(8, 24, 1, bias=False), bn(24), torch.nn.ReLU6())
        self.depthwise = torch.nn.Sequential(torch.nn.Conv2d(24, 24, 3, padding=1, groups=24, bias=False), bn(24),
                                             torch.nn.ReLU6())
        self.project = torch.nn.Sequential(torch.nn.Conv2d(24, 8, 1, bias=False), bn(8))
        self.first = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), bn(16),
                                         torch.nn.ReLU())
        self.second = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1, bias=False), bn(16))
        self.down = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1, stride=2, bias=False), bn(16))
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        h = self.stem(x)
        h = h + self.project(self.depthwise(self.expand(h)))
        h = torch.nn.functional.max_pool2d(h, 3, 1, 1)
        h = torch.relu(self.second(self.first(h)) + self.down(h))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(h, 1), 1))


@pytest.mark.parametrize("image", [(32, 32), (23, 17)])
def test_a_small_convolutional_net_is_one_program_equal_to_the_interpreter(image):
    torch.manual_seed(6)
    model = _Block().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
    executor, reference = _executors(model, torch.randn(2, 3, *image))
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(8)
    for batch in (2, 1, 3):
        x = rng.standard_normal((batch, 3, *image)).astype(np.float32)
        got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-4, atol=1e-5)
        with torch.no_grad():
            np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason


class _Inverted(torch.nn.Module):
    """A 1x1 expand to 40 channels (two blocks of 16 lanes and a partial one; five of 8) with a
    ReLU6, a depthwise 3x3 with a clamp of its own bounds, a 1x1 project with a hardtanh."""

    def __init__(self, stride):
        super().__init__()
        self.expand = torch.nn.Conv2d(6, 40, 1)
        self.depthwise = torch.nn.Conv2d(40, 40, 3, stride=stride, padding=1, groups=40)
        self.project = torch.nn.Conv2d(40, 6, 1)

    def forward(self, x):
        h = torch.nn.functional.relu6(self.expand(x))
        h = torch.clamp(self.depthwise(h), min=-0.5, max=2.0)
        return torch.nn.functional.hardtanh(self.project(h), -0.25, 0.75)


def _three_fused_heads(model, shape, dtype):
    """`model` in `dtype`, its executor and interpreter traced at `shape`, its three convolutions'
    groups each done by its head (the products apply the group's bounds as they store)."""
    model = model.eval()
    if dtype == np.float64:
        model = model.double()
    executor, reference = _executors(model, torch.from_numpy(np.ones(shape, dtype)))
    heads = [s for s in executor.group_steps if s.head is not None]
    assert len(heads) == 3 and all(s.variants[0].head_is_result for s in heads)
    return model, executor, reference


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, stride", [((4, 4), 1), ((2, 2), 1), ((5, 3), 2), ((8, 8), 2), ((15, 15), 2)])
def test_blocked_depthwise_and_clamp_epilogues_equal_torch(image, stride, dtype):
    """Depthwise convolutions by blocks of channels (blocked_depthwise.py) and ReLU6/clamp/hardtanh
    applied by the products as they store: one program, its groups' heads their results, equal to
    the interpreter and to torch at batch sizes it was not traced with, NaN and values past the
    bounds included."""
    assert blocked_depthwise.takes(image, (3, 3), conv_geometry((1, 40, *image), (40, 1, 3, 3), stride, 1, 1, 40))
    torch.manual_seed(7)
    model, executor, reference = _three_fused_heads(_Inverted(stride), (2, 6, *image), dtype)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(9)
    for batch in (2, 1, 3, 5):
        x = (4 * rng.standard_normal((batch, 6, *image))).astype(dtype)
        x[0, 1, 0, 0] = np.nan
        got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-5, equal_nan=True)
        with torch.no_grad():
            np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5, equal_nan=True)
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("way", ["taps", "bands", "side by side"])
def test_a_relu6_after_a_convolution_is_applied_by_its_products(way, monkeypatch):
    """ReLU6 as the GEMM's epilogue (gemm.py's floor and ceiling) in each way a convolution's
    products run: tap products, banded im2col columns, images side by side."""
    if way == "bands":
        monkeypatch.setattr(tap_products, "TAP_MIN_POSITIONS", 1 << 30)
    if way == "side by side":
        monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    torch.manual_seed(8)
    model = torch.nn.Sequential(torch.nn.Conv2d(5, 12, 3, padding=1), torch.nn.ReLU6()).eval()
    executor, reference = _executors(model, torch.randn(2, 5, 12, 12))
    [head] = [s for s in executor.group_steps if s.head is not None]
    assert head.variants[0].head_is_result
    rng = np.random.default_rng(10)
    for batch in (2, 1, 3):
        x = (20 * rng.standard_normal((batch, 5, 12, 12))).astype(np.float32)
        x[0, 0, 5, 5] = np.nan
        got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-5, equal_nan=True)
        assert np.nanmax(got) == 6.0 and np.nanmin(got) == 0.0
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


class _LeakyLayers(torch.nn.Module):
    """A convolution then a LeakyReLU of `slope`, a depthwise 3x3 then F.leaky_relu, a transposed
    convolution then an in-place LeakyReLU: each group's head applies the slope as it stores."""

    def __init__(self, kernel, slope):
        super().__init__()
        self.conv = torch.nn.Conv2d(5, 16, kernel, padding=kernel // 2)
        self.depthwise = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.transposed = torch.nn.ConvTranspose2d(16, 6, 4, stride=2, padding=1)
        self.slope = slope

    def forward(self, x):
        h = torch.nn.LeakyReLU(self.slope)(self.conv(x))
        h = torch.nn.functional.leaky_relu(self.depthwise(h), self.slope)
        return torch.nn.LeakyReLU(self.slope, inplace=True)(self.transposed(h))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("way, image, kernel, slope", [
    ("taps", (12, 12), 3, 0.2), ("bands", (9, 11), 3, 0.01), ("side by side", (7, 7), 3, 1.5),
    ("narrow", (2, 2), 1, -0.3), ("blocked depthwise", (4, 4), 1, 0.2), ("bands", (1, 1), 1, 0.2)])
def test_a_leaky_relu_after_a_convolution_is_applied_by_its_products(way, image, kernel, slope, dtype, monkeypatch):
    """LeakyReLU as the epilogue (heads.epilogue's mode 3) of the GEMM, the narrow product, both
    depthwise loops and col2im: equal to the interpreter at batch sizes the program was not traced
    with, NaN and -0 included, for slopes below 0, in (0, 1) and past 1."""
    if way == "bands":
        monkeypatch.setattr(tap_products, "TAP_MIN_POSITIONS", 1 << 30)
    if way == "side by side":
        monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    torch.manual_seed(11)
    _, executor, reference = _three_fused_heads(_LeakyLayers(kernel, slope), (2, 5, *image), dtype)
    rng = np.random.default_rng(12)
    for batch in (2, 1, 3, 5):
        x = (3 * rng.standard_normal((batch, 5, *image))).astype(dtype)
        x[0, 1, 0, 0] = np.nan
        x[-1, 2] = -0.0
        got = executor([x])[0]
        expected = reference.run([x])[0]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
        assert np.isnan(got).any()
    [segment] = [s for s in executor.steps if isinstance(s, SegmentStep)]
    assert segment.programs and all(segment.programs.values()), segment.reason


class _Pools(torch.nn.Module):
    def __init__(self, kernel, stride, padding, ceil_mode):
        super().__init__()
        self.args = kernel, stride, padding, 1, ceil_mode

    def forward(self, x):
        return torch.nn.functional.max_pool2d(torch.relu(x) - 0.25, *self.args)


@pytest.mark.skipif(pool._native is None, reason="the native workers run on Linux only")
@pytest.mark.parametrize("kernel, stride", [(2, 2), (3, 2)])
def test_pooling_splits_across_the_workers_by_planes_with_the_bits_of_one_thread(kernel, stride):
    """A pool of 2 x 32 x 48 x 48 (past the split's minimum) hands the worker its part of the planes,
    or of the blocks of channels (the strided 3x3, blocked_pool.py), and gives one thread's bits."""
    model = torch.nn.MaxPool2d(kernel, stride)
    example = torch.from_numpy(np.ones((2, 32, 48, 48), np.float32))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    one, two = Executor(graph, threads=1), Executor(graph, threads=2)
    x = np.random.default_rng(12).standard_normal((2, 32, 48, 48)).astype(np.float32)
    expected = one([x])[0]
    two([x])
    posted = ctypes.c_int32.from_address(pool._native.blocks)
    before = posted.value
    np.testing.assert_array_equal(two([x])[0], expected)
    assert posted.value > before
    np.testing.assert_array_equal(expected, Interpreter(graph).run([x])[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, kernel, stride, padding, ceil_mode", [
    ((15, 15), 3, 2, 0, True),    # SqueezeNet's: windows past the image's end
    ((7, 9), 3, 2, 1, False),
    ((8, 8), 2, 2, 0, False),
    ((5, 6), (2, 3), (2, 1), (1, 0), True),
])
def test_strided_max_pooling_by_blocks_of_channels_equals_torch(image, kernel, stride, padding, ceil_mode, dtype):
    """Max pooling by blocks of channels (blocked_pool.py) in a program: 20 channels (a block of 16
    and a partial one; 8-lane blocks in float64), NaN, batch sizes it was not traced with."""
    assert blocked_pool.takes(pool_geometry((2, 20, *image), kernel, stride, padding, 1, ceil_mode))
    model = _Pools(kernel, stride, padding, ceil_mode)
    executor, reference = _executors(model, torch.from_numpy(np.ones((2, 20, *image), dtype)))
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(11)
    for batch in (2, 1, 3):
        x = rng.standard_normal((batch, 20, *image)).astype(dtype)
        x[0, 17, 1, 1] = np.nan
        got = executor([x])[0]
        np.testing.assert_array_equal(got, reference.run([x])[0])
        np.testing.assert_array_equal(got, model(torch.from_numpy(x)).numpy())
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason
