"""The shared checks of ops/rules.py raise what torch raises for the same shapes, in its words."""

from __future__ import annotations

import pytest

import scriptc
from scriptc.ops import OPS
from scriptc.types import TensorType, float32

torch = pytest.importorskip("torch")


def _torch_message(call) -> str:
    with pytest.raises(RuntimeError) as refused:
        call()
    return str(refused.value)


@pytest.mark.parametrize("wrong", ["running_mean", "weight", "bias"])
def test_batch_norm_rule_refuses_a_per_channel_tensor_of_another_size_as_torch(wrong):
    sizes = {"running_mean": 3, "running_var": 3, "weight": 3, "bias": 3, wrong: 4}
    expected = _torch_message(lambda: torch.nn.functional.batch_norm(
        torch.ones(2, 3), *(torch.ones(sizes[n]) for n in ("running_mean", "running_var", "weight", "bias"))))
    metas = [TensorType(float32, (sizes[n],)) for n in ("running_mean", "running_var", "weight", "bias")]
    with pytest.raises(RuntimeError) as refused:
        OPS["batch_norm"].shape(TensorType(float32, (2, 3)), *metas)
    assert str(refused.value) == expected
    with pytest.raises(RuntimeError) as eager:
        scriptc.nn.functional.batch_norm(scriptc.ones(2, 3), *(scriptc.ones(sizes[n]) for n in (
            "running_mean", "running_var", "weight", "bias")))
    assert str(eager.value) == expected


def test_group_norm_rule_refuses_a_per_channel_tensor_of_another_size_as_torch():
    expected = _torch_message(lambda: torch.nn.functional.group_norm(torch.ones(2, 4, 5), 2, torch.ones(3)))
    with pytest.raises(RuntimeError) as refused:
        OPS["group_norm"].shape(TensorType(float32, (2, 4, 5)), 2, TensorType(float32, (3,)))
    assert str(refused.value) == expected
    # (torch's message for a wrong bias prints the weight's shape: ours names the bias's own)
    with pytest.raises(RuntimeError, match=r"^Expected bias to be a vector .* but got bias of shape \[3\] and input "
                                           r"of shape \[2, 4, 5\]$"):
        OPS["group_norm"].shape(TensorType(float32, (2, 4, 5)), 2, TensorType(float32, (4,)),
                                TensorType(float32, (3,)))


@pytest.mark.parametrize("conv, x_shape, w_shape", [
    ("conv1d", (3, 5), (2, 2, 3)), ("conv2d", (1, 3, 5, 5), (2, 4, 3, 3)), ("conv2d", (3, 5, 5), (2, 4, 3, 3)),
    ("conv_transpose2d", (3, 5, 5), (4, 2, 3, 3)), ("conv3d", (1, 3, 4, 4, 4), (2, 2, 1, 1, 1)),
])
def test_a_convolution_of_other_channels_is_refused_as_torch_refuses_it(conv, x_shape, w_shape):
    expected = _torch_message(lambda: getattr(torch.nn.functional, conv)(torch.ones(x_shape), torch.ones(w_shape)))
    with pytest.raises(RuntimeError) as refused:
        getattr(scriptc.nn.functional, conv)(scriptc.ones(x_shape), scriptc.ones(w_shape))
    assert str(refused.value) == expected
    with pytest.raises(RuntimeError) as by_rule:
        OPS[conv].shape(TensorType(float32, x_shape), TensorType(float32, w_shape))
    assert str(by_rule.value) == expected
