"""batch_norm of an empty batch: the empty input back and the running statistics untouched (torch's
rule, also in training mode), with a gradient of the input's shape."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
import scriptc.nn.functional as F


def test_an_empty_batch_passes_through_and_leaves_the_running_statistics():
    x = torch.zeros(0, 3, 2, 2, requires_grad=True)
    running_mean, running_var = torch.full([3], 0.5), torch.full([3], 2.0)
    for training in (True, False):
        y = F.batch_norm(x, running_mean, running_var, torch.ones(3), torch.zeros(3), training)
        assert list(y.shape) == [0, 3, 2, 2]
        y.sum().backward()
        assert list(x.grad.shape) == [0, 3, 2, 2]
    np.testing.assert_array_equal(running_mean.numpy(), [0.5] * 3)
    np.testing.assert_array_equal(running_var.numpy(), [2.0] * 3)


def test_an_empty_batch_in_script_and_a_single_value_per_channel_still_refused():
    def normalize(x, mean, var):
        return F.batch_norm(x, mean, var, None, None, True)

    scripted = torch.jit.script(normalize)
    assert list(scripted(torch.zeros(0, 3), torch.zeros(3), torch.ones(3)).shape) == [0, 3]
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        scripted(torch.zeros(1, 3), torch.zeros(3), torch.ones(3))

