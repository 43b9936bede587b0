"""conv_transpose2d in segment programs (runtime/transposed_lowering.py, native/col2im.py): the GEMM and
col2im against the reference interpreter, for every batch size, and BatchNorm folded into it."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.ir.graph import walk
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


class _Transposed(torch.nn.Module):
    """One transposed convolution, reading the second half of its input's channels (a view the
    program copies first), followed by a ReLU (a group of its own after it)."""

    def __init__(self, channels: int, out_channels: int, kernel, options: dict):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(channels, out_channels, kernel, **options)

    def forward(self, x):
        return torch.relu(self.up(x.chunk(2, 1)[1]))


def _compiled(model, example):
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model.eval(), example), jit=False).graph
    return Executor(graph, threads=2), Interpreter(graph)


def _one_program(executor) -> None:
    """The executor is one segment, and each call so far ran its program."""
    assert [type(s) for s in executor.steps] == [SegmentStep]
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("channels, out_channels, kernel, size, options", [
    (4, 6, 4, (5, 5), dict(stride=2, padding=1)),                       # DCGAN's upsampling
    (5, 3, 3, (7, 4), dict(stride=1, padding=0, bias=False)),
    (6, 4, (2, 3), (3, 5), dict(stride=(3, 2), padding=(0, 1), output_padding=(2, 1))),
    (6, 9, 3, (4, 6), dict(stride=2, padding=2, dilation=2, output_padding=1, groups=3)),
    (2, 5, 4, (1, 1), dict(stride=1, padding=0)),                       # DCGAN's first layer: one GEMM
    (3, 4, (2, 3), (1, 1), dict(stride=2, bias=False)),
    (3, 4, 2, (1, 1), dict(stride=1, padding=0, output_padding=0, dilation=2)),  # (not one GEMM)
    (8, 8, 3, (6, 5), dict(stride=2, padding=1, groups=2, bias=False, dilation=(1, 2))),
    (4, 5, 3, (3, 13), dict(stride=2, padding=1, output_padding=1)),    # pairs of 8 and 4 columns, one left
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_transposed_convolution_equals_the_interpreter_at_every_batch_size(channels, out_channels, kernel, size,
                                                                              options, dtype):
    torch.manual_seed(3)
    model = _Transposed(channels, out_channels, kernel, options)
    if dtype == np.float64:
        model = model.double()
    rng = np.random.default_rng(4)
    example = torch.from_numpy(rng.standard_normal((2, 2 * channels) + size).astype(dtype))
    executor, reference = _compiled(model, example)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for batch in (2, 1, 5, 17):
        x = rng.standard_normal((batch, 2 * channels) + size).astype(dtype)
        got, want = executor([x])[0], reference.run([x])[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    _one_program(executor)
    with torch.no_grad():
        np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("column_bytes", [1, 3000, 1 << 20])
def test_images_one_at_a_time_or_side_by_side_equal_the_interpreter(monkeypatch, column_bytes):
    """One image per GEMM (the input read in place), a few (batches that fill the last step and ones
    that do not), all of them."""
    from scriptc.runtime import transposed_lowering

    monkeypatch.setattr(transposed_lowering, "COLUMN_BYTES", column_bytes)
    torch.manual_seed(5)
    model = _Transposed(4, 4, 3, dict(stride=2, padding=1, output_padding=1))
    rng = np.random.default_rng(6)
    executor, reference = _compiled(model, torch.from_numpy(rng.standard_normal((2, 8, 5, 6)).astype(np.float32)))
    for batch in (2, 1, 7, 3, 20):
        x = rng.standard_normal((batch, 8, 5, 6)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    _one_program(executor)


def test_another_image_size_or_arguments_the_op_refuses_run_the_steps():
    torch.manual_seed(7)
    model = _Transposed(4, 4, 3, dict(stride=2, padding=1))
    rng = np.random.default_rng(8)
    executor, reference = _compiled(model, torch.from_numpy(rng.standard_normal((2, 8, 5, 5)).astype(np.float32)))
    x = rng.standard_normal((3, 8, 7, 6)).astype(np.float32)
    np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="Given input size per channel"):
        executor([rng.standard_normal((3, 8, 7, 0)).astype(np.float32)])


def _generator(nz: int = 12, ngf: int = 4, nc: int = 3, groups: int = 1):
    """pytorch/examples' DCGAN generator, narrower (and grouped where asked)."""
    nn = torch.nn
    layers = [nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True)]
    for width in (8, 4, 2):
        layers += [nn.ConvTranspose2d(ngf * width, ngf * width // 2, 4, 2, 1, bias=False, groups=groups),
                   nn.BatchNorm2d(ngf * width // 2), nn.ReLU(True)]
    layers += [nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh()]
    model = nn.Sequential(*layers)
    with torch.no_grad():  # statistics that are not the identity, so that folding them shows
        for module in model:
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.num_features) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features) + 0.5)
                module.weight.copy_(torch.rand(module.num_features) + 0.5)
                module.bias.copy_(torch.randn(module.num_features) * 0.1)
    return model.eval()


@pytest.mark.parametrize("groups", [1, 2])
def test_the_dcgan_generator_is_one_program_with_its_batchnorms_folded(groups):
    torch.manual_seed(9)
    model = _generator(groups=groups)
    rng = np.random.default_rng(10)
    executor, reference = _compiled(model, torch.from_numpy(rng.standard_normal((4, 12, 1, 1)).astype(np.float32)))
    for batch in (4, 1, 9):
        x = rng.standard_normal((batch, 12, 1, 1)).astype(np.float32)
        got = executor([x])[0]
        assert got.shape == (batch, 3, 64, 64)
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-4, atol=1e-5)
        with torch.no_grad():
            np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-5)
    _one_program(executor)


def test_batchnorm_folds_into_a_grouped_transposed_convolution_as_torch_computes_it():
    torch_ = pytest.importorskip("torch")
    torch.manual_seed(11)
    model = _generator(groups=2)
    theirs = torch_.nn.Sequential(*[getattr(torch_.nn, type(m).__name__)(*_arguments(m)) for m in model]).eval()
    theirs.load_state_dict({k: torch_.from_numpy(np.array(v.numpy())) for k, v in model.state_dict().items()})
    x = np.random.default_rng(12).standard_normal((3, 12, 1, 1)).astype(np.float32)
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.from_numpy(x)), jit=False).graph
    assert not any(n.op == "batch_norm" for n in walk(graph.block))
    with torch_.no_grad():
        want = theirs(torch_.from_numpy(x)).numpy()
    np.testing.assert_allclose(Executor(graph, threads=1)([x])[0], want, rtol=1e-4, atol=1e-5)


def _arguments(module) -> tuple:
    """The constructor arguments of the generator's layers, for torch's copy of it."""
    if isinstance(module, torch.nn.ConvTranspose2d):
        return (module.in_channels, module.out_channels, module.kernel_size, module.stride, module.padding,
                module.output_padding, module.groups, module.bias is not None)
    if isinstance(module, torch.nn.BatchNorm2d):
        return (module.num_features,)
    return ()


def test_the_head_kernel_applies_the_floor_as_numpy_maximum():
    """conv_transpose2d as a group's head outside a program (the steps): its ReLU is a floor, NaN kept."""
    from scriptc import ops
    from scriptc.native.heads import head_kernel

    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 4, 5))
    x[0, 0, 1, 1] = np.nan
    w = rng.standard_normal((3, 2, 3, 3))
    op = ops.OPS["conv_transpose2d"]
    plain = op.kernel(np, x, w, None, [2, 2], [1, 1], [1, 1], 1, [1, 1])
    floored = head_kernel(op, floor=0.0)(np, x, w, None, [2, 2], [1, 1], [1, 1], 1, [1, 1])
    np.testing.assert_array_equal(floored, np.maximum(plain, 0.0))
    assert np.isnan(floored).any()
