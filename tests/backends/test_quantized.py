"""torch.backends.quantized: the engine scriptc's quantized ops compute as."""

from __future__ import annotations

import pytest

import scriptc


def test_engine_is_x86_and_settable_to_a_supported_one():
    quantized = scriptc.backends.quantized
    assert quantized.engine == "x86" and quantized.supported_engines == ["x86", "fbgemm"]
    quantized.engine = "fbgemm"
    try:
        assert quantized.engine == "fbgemm"
    finally:
        quantized.engine = "x86"


def test_an_engine_scriptc_lacks_is_refused_in_torchs_words():
    with pytest.raises(RuntimeError, match="qnnpack is not a valid value for quantized engine"):
        scriptc.backends.quantized.engine = "qnnpack"
    assert scriptc.backends.quantized.engine == "x86"
