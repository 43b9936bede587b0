"""Results of frozen, optimized and loaded modules as Python sees them (scriptc/jit/compiled_modules.py)."""

from typing import Dict, List, Tuple

import numpy as np
import pytest

import scriptc as torch
from scriptc import nn, runtime


class _Dtypes(nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[int, List[torch.dtype], Dict[str, torch.dtype], torch.Tensor]:
        return 3, [x.dtype, torch.float64], {"d": x.dtype}, x.to(6) + 1


def _every_boundary(module_class, tmp_path):
    """(name, callable) for each way a PyTorch user calls compiled code: scripted, frozen,
    optimize_for_inference, jit.load of a saved scripted module, runtime.load of it."""
    scripted = torch.jit.script(module_class().eval())
    torch.jit.save(scripted, tmp_path / "m.pt")
    return [("script", scripted), ("freeze", torch.jit.freeze(torch.jit.script(module_class().eval()))),
            ("optimize_for_inference", torch.jit.optimize_for_inference(torch.jit.script(module_class().eval()))),
            ("jit.load", torch.jit.load(tmp_path / "m.pt")), ("runtime.load", runtime.load(tmp_path / "m.pt"))]


@pytest.mark.parametrize("dtype, number", [(torch.float32, 6), (torch.int64, 4), (torch.bool, 11)])
def test_a_dtype_result_is_its_scalar_type_number_at_every_boundary(dtype, number, tmp_path):
    # torch's scripted, frozen, optimized and loaded modules all return x.dtype as an int (6 for float32)
    x = torch.ones(3, dtype=dtype)
    for name, compiled in _every_boundary(_Dtypes, tmp_path):
        count, listed, keyed, y = compiled(x)
        assert (count, listed, keyed) == (3, [number, 7], {"d": number}), name
        np.testing.assert_array_equal(np.asarray(y), np.full(3, 2.0, np.float32), err_msg=name)


def test_dtype_results_match_torch_at_every_boundary(tmp_path):
    real = pytest.importorskip("torch")

    class Real(real.nn.Module):
        def forward(self, x: real.Tensor) -> Tuple[int, List[real.dtype], Dict[str, real.dtype], real.Tensor]:
            return 3, [x.dtype, real.float64], {"d": x.dtype}, x.to(6) + 1

    scripted = real.jit.script(Real().eval())
    real.jit.save(scripted, str(tmp_path / "real.pt"))
    x = real.ones(3, dtype=real.int64)
    expected = [scripted(x), real.jit.freeze(real.jit.script(Real().eval()))(x),
                real.jit.optimize_for_inference(real.jit.script(Real().eval()))(x), real.jit.load(str(tmp_path / "real.pt"))(x)]
    ours = _every_boundary(_Dtypes, tmp_path)
    for want, (name, compiled) in zip(expected, ours):
        got = compiled(torch.ones(3, dtype=torch.int64))
        assert got[:3] == want[:3], name
        np.testing.assert_array_equal(np.asarray(got[3]), want[3].numpy(), err_msg=name)


class _Converts(nn.Module):
    def forward(self, x: torch.Tensor, d: torch.dtype) -> torch.Tensor:
        return x.to(d)


def test_a_scalar_type_number_is_a_dtype_argument_at_every_boundary(tmp_path):
    # torch's modules take 4 for int64 wherever they take a dtype; a str there is torch's RuntimeError
    for name, compiled in _every_boundary(_Converts, tmp_path):
        assert np.asarray(compiled(torch.ones(2), 4)).dtype == np.int64, name
        assert np.asarray(compiled(torch.ones(2), torch.float64)).dtype == np.float64, name
        with pytest.raises(RuntimeError, match="ScalarType"):  # (runtime.load's: a SignatureError naming d)
            compiled(torch.ones(2), "int64")


def test_a_frozen_module_holds_no_parameters_or_buffers_as_torchs():
    # torch's frozen module folds its weights into the graph: parameters() and state_dict() are empty
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).eval()
    for frozen in (torch.jit.freeze(torch.jit.script(model)),
                   torch.jit.optimize_for_inference(torch.jit.trace(model, torch.ones(1, 1, 5, 5)))):
        assert list(frozen.parameters()) == [] and list(frozen.named_parameters()) == []
        assert list(frozen.buffers()) == [] and list(frozen.named_buffers()) == []
        assert frozen.state_dict() == {}
