"""detect_anomaly / set_detect_anomaly and autograd.graph.saved_tensors_hooks against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def test_nan_in_backward_names_the_backward_function():
    for lib in (torch, scriptc):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            context = lib.autograd.detect_anomaly()
        with context:
            y = (x.sqrt() * 0).sum()  # sqrt'(0) * 0 = inf * 0 = nan
            with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
                with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th "
                                                       "output."):
                    y.backward()
        assert not lib.is_anomaly_enabled()


def test_set_detect_anomaly_switches_and_without_it_nan_passes():
    for lib in (torch, scriptc):
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled()
        x = lib.tensor([0.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        assert np.isnan(x.grad.numpy()).all()


def test_saved_tensors_hooks_pack_and_unpack_saved_inputs():
    counts = []
    for lib in (torch, scriptc):
        packed, unpacked = [], []

        def pack(t):
            packed.append(tuple(t.shape))
            return t.detach().clone() * 1

        def unpack(t):
            unpacked.append(tuple(t.shape))
            return t
        x = lib.tensor(np.arange(1.0, 4.0), requires_grad=True)
        w = lib.tensor(np.full(3, 2.0), requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * w).sum()
        y.backward()
        counts.append((sorted(packed), sorted(unpacked)))
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0))
        np.testing.assert_allclose(w.grad.numpy(), np.arange(1.0, 4.0))
    assert counts[0] == counts[1]


def test_saved_tensors_hooks_apply_to_function_saves_and_can_be_disabled():
    for lib in (torch, scriptc):
        seen = []

        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 + x * 0
        x = lib.ones(2, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append("pack") or t,
                                                    lambda t: seen.append("unpack") or t):
            y = Double.apply(x)
        y.sum().backward()
        assert seen == ["pack", "unpack"]
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass


def test_ops_inside_a_pack_hook_are_not_packed_again_as_torch():
    found = []
    for lib in (torch, scriptc):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        packed = []
        with lib.autograd.graph.saved_tensors_hooks(lambda a: (packed.append(tuple(a.shape)), a * a)[1],
                                                    lambda a: a):
            y = (x * x).sum()
        y.backward()
        found.append((packed, x.grad.numpy().tolist()))
    assert found[1] == found[0] == ([(2,), (2,)], [2.0, 8.0])
