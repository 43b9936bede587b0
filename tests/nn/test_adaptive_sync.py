"""AdaptiveLogSoftmaxWithLoss and SyncBatchNorm against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
import scriptc.nn as nn

from .compare import copy_weights

torch = pytest.importorskip("torch")

rng = np.random.default_rng(5)


@pytest.mark.parametrize("cutoffs, head_bias, div_value", [([4, 9], False, 4.0), ([3], True, 2.0), ([2, 5, 8], False, 1.5)])
def test_adaptive_log_softmax_matches_torch(cutoffs, head_bias, div_value):
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 12, cutoffs, div_value=div_value, head_bias=head_bias)
    ours = nn.AdaptiveLogSoftmaxWithLoss(16, 12, cutoffs, div_value=div_value, head_bias=head_bias)
    copy_weights(theirs, ours)
    x = rng.standard_normal((7, 16)).astype(np.float32)
    target = np.array([0, 11, 3, 4, 9, 8, 1])
    tx, sx = torch.tensor(x, requires_grad=True), scriptc.tensor(x, requires_grad=True)
    t_out, s_out = theirs(tx, torch.tensor(target)), ours(sx, scriptc.tensor(target))
    np.testing.assert_allclose(s_out.output.detach().numpy(), t_out.output.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s_out.loss.item(), t_out.loss.item(), rtol=1e-5)
    t_out.loss.backward()
    s_out.loss.backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.log_prob(scriptc.tensor(x)).detach().numpy(),
                               theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(scriptc.tensor(x)).numpy(), theirs.predict(torch.tensor(x)).numpy())
    single = ours(scriptc.tensor(x[0]), scriptc.tensor(target[0]))
    assert single.output.dim() == 0
    np.testing.assert_allclose(single.output.item(), s_out.output[0].item(), rtol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda T: T.nn.AdaptiveLogSoftmaxWithLoss(4, 10, []), "cutoffs should be a sequence of length larger than 0"),
    (lambda T: T.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3]), "cutoffs should be a sequence of unique"),
    (lambda T: T.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(T.zeros(2, 4), T.tensor([1, 10])),
     "Target values should be in \\[0, 9\\]"),
    (lambda T: T.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])(T.zeros(2, 4), T.tensor([1])),
     "same size in the batch dimension"),
])
def test_adaptive_log_softmax_errors(call, message):
    for T in (scriptc, torch):
        with pytest.raises((ValueError, RuntimeError), match=message):
            call(T)


def test_sync_batch_norm_is_batch_norm_in_one_process():
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4))
    ours = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
    copy_weights(theirs, ours)
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    ours = nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    assert type(ours[1]).__name__ == "SyncBatchNorm" and repr(ours[1]) == repr(theirs[1])
    x = rng.standard_normal((5, 3, 4, 4)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(ours(scriptc.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[1].running_var.numpy(), theirs[1].running_var.numpy(), rtol=1e-5)
    for T in (scriptc, torch):
        with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input\\)"):
            T.nn.SyncBatchNorm(3)(T.zeros(3))
