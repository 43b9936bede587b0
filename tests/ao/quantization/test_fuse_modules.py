"""fuse_modules on a quantizable float model (torchvision's quantizable ResNet block: stubs, a FloatFunctional
skip add, conv+bn+relu runs) against torch's: the same module types, state_dict keys and results, and the
fused model through jit.script and jit.trace."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _block(lib):
    nn = lib.nn

    class QuantizableBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = lib.ao.quantization.QuantStub()
            self.conv1, self.bn1, self.relu = nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU()
            self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)
            self.project = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU())
            self.fc, self.fc_relu, self.fc_bn = nn.Linear(4, 6), nn.ReLU(), nn.BatchNorm1d(6)
            self.skip_add = nn.quantized.FloatFunctional()
            self.dequant = lib.ao.quantization.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            out = self.skip_add.add_relu(out, self.project(x))
            out = self.skip_add.cat([out, self.skip_add.mul_scalar(out, 0.5)], 1).mean((2, 3))[:, :4]
            return self.dequant(self.fc_bn(self.fc_relu(self.fc(out))))

    return QuantizableBlock()


_FUSED = [["conv1", "bn1", "relu"], ["conv2", "bn2"], ["project.0", "project.1"], ["fc", "fc_relu"]]


def _pair():
    torch.manual_seed(0)
    ours, theirs = _block(scriptc), _block(torch)
    with torch.no_grad():
        for module in theirs.modules():
            if isinstance(module, (torch.nn.BatchNorm2d, torch.nn.BatchNorm1d)):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
    state = theirs.state_dict()
    ours.load_state_dict(collections.OrderedDict((k, scriptc.from_numpy(v.numpy().copy())) for k, v in state.items()))
    return ours.eval(), theirs.eval()


def test_fused_modules_are_torchs_and_compute_the_same():
    ours, theirs = _pair()
    fused_ours = scriptc.ao.quantization.fuse_modules(ours, _FUSED)
    fused_theirs = torch.ao.quantization.fuse_modules(theirs, _FUSED)
    assert [type(m).__name__ for m in fused_ours.modules()] == [type(m).__name__ for m in fused_theirs.modules()]
    assert list(fused_ours.state_dict()) == list(fused_theirs.state_dict())
    assert type(ours.bn1).__name__ == "BatchNorm2d"  # (not in place: the model given is unchanged)
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    with torch.no_grad():
        want = fused_theirs(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(theirs(torch.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)
    with scriptc.no_grad():
        np.testing.assert_allclose(ours(scriptc.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fused_ours(scriptc.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)
        for compiled in (scriptc.jit.script(fused_ours), scriptc.jit.trace(fused_ours, scriptc.from_numpy(x))):
            np.testing.assert_allclose(compiled(scriptc.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)


def test_fusing_refuses_what_torch_refuses():
    ours, theirs = _pair()
    for lib, model in ((scriptc, ours), (torch, theirs)):
        with pytest.raises(AssertionError, match="did not find fuser method for"):
            lib.ao.quantization.fuse_modules(model, ["relu", "conv2"])
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.ao.quantization.fuse_modules(model.train(), ["conv2", "bn2"])
    with pytest.raises(RuntimeError, match="FloatFunctional is not intended to use the 'forward'"):
        scriptc.nn.quantized.FloatFunctional()(scriptc.ones(2))
