"""docs/api.md is what `python -m scriptc.apidoc` writes; missing torch names raise an AttributeError that
says so (never a guess at another function); scriptc/torch_names.py matches the installed torch."""

from __future__ import annotations

import pytest

import scriptc
from scriptc import apidoc, torch_names


def test_api_page_is_current():
    expected = apidoc.render()
    actual = apidoc.API_PAGE.read_text() if apidoc.API_PAGE.exists() else ""
    assert actual == expected, f"docs/api.md is out of date: run `{apidoc.REGENERATE}` and commit docs/api.md"


def test_torch_names_match_the_installed_torch():
    pytest.importorskip("torch")
    current = apidoc.torch_names_source().split("NAMES = ", 1)[1]
    recorded = apidoc.NAMES_MODULE.read_text().split("NAMES = ", 1)[1]
    assert recorded == current, f"scriptc/torch_names.py is stale: run `{apidoc.REGENERATE} --torch-names`"


@pytest.mark.parametrize("lookup, text", [
    (lambda: scriptc.quantized_max_pool3d, "module 'scriptc' has no attribute 'quantized_max_pool3d': "
                                           "torch.quantized_max_pool3d is not supported by scriptc yet "
                                           "(docs/api.md lists what is)"),
    (lambda: scriptc.nn.CrossMapLRN2d, "torch.nn.CrossMapLRN2d is not supported by scriptc yet"),
    (lambda: scriptc.nn.functional.scaled_grouped_mm,
     "torch.nn.functional.scaled_grouped_mm is not supported by scriptc yet"),
    (lambda: scriptc.ones(1).to_mkldnn, "'Tensor' object has no attribute 'to_mkldnn': "
                                         "torch.Tensor.to_mkldnn is not supported"),
    (lambda: scriptc.autograd.kineto_available, "module 'scriptc.autograd' has no attribute 'kineto_available': "
                                                "torch.autograd.kineto_available is not supported by scriptc yet"),
    (lambda: scriptc.autograd.is_multithreading_enabled,
     "torch.autograd.is_multithreading_enabled is not supported by scriptc yet"),
    (lambda: scriptc.quantized_rnn_tanh_cell, "torch.quantized_rnn_tanh_cell is not supported by scriptc yet"),
])
def test_a_torch_name_scriptc_lacks_says_so(lookup, text):
    with pytest.raises(AttributeError) as info:
        lookup()
    assert text in str(info.value) and "Did you mean" not in str(info.value)


@pytest.mark.parametrize("lookup, suggestion", [
    (lambda: scriptc.allclse, "allclose"), (lambda: scriptc.ones(1).clon, "clone"),
    (lambda: scriptc.nn.Linera, "Linear"), (lambda: scriptc.nn.functional.rleu, "relu"),
    (lambda: scriptc.linalg.choleksy, "cholesky"), (lambda: scriptc.fft.rfftt, "rfft"),
])
def test_a_typo_gets_a_close_existing_name(lookup, suggestion):
    with pytest.raises(AttributeError, match=f"Did you mean: '{suggestion}'"):
        lookup()


def test_names_that_neither_has_get_no_guess():
    name = "not_a_torch_function_at_all"
    with pytest.raises(AttributeError) as info:
        getattr(scriptc, name)
    assert str(info.value) == "module 'scriptc' has no attribute 'not_a_torch_function_at_all'"
    assert not hasattr(scriptc.ones(1), "__torch_function__x")
    assert torch_names.supported("torch", "allclose") and not torch_names.supported("torch", "quantized_max_pool3d")


def test_every_name_dir_lists_resolves():
    """`dir(scriptc)` offers only names that `getattr` can resolve (a submodule listed under a name it
    does not have sent users to a 'Did you mean' of itself)."""
    unresolved = [name for name in dir(scriptc) if not hasattr(scriptc, name)]
    assert unresolved == []
