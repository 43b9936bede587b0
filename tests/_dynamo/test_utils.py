"""torch._dynamo.utils.is_compile_supported against torch 2.13."""

import pytest

import scriptc

pytestmark = pytest.mark.usefixtures("torch_validation_kept")  # the test imports torch._dynamo


@pytest.mark.parametrize("device", ["cpu", "cuda", "cpu:0"])
def test_is_compile_supported_as_torch_answers_on_a_machine_without_a_gpu(device):
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import is_compile_supported

    assert scriptc._dynamo.utils.is_compile_supported(device) == is_compile_supported(device)
    assert scriptc._dynamo.utils.is_compile_supported(scriptc.device(device)) == is_compile_supported(
        torch.device(device))
