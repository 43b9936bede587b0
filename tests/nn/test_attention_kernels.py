"""torch.nn.attention's kernel choice (SDPBackend, sdpa_kernel) and torch.backends.cuda's sdp switches against
torch 2.13: which scaled_dot_product_attention calls the CPU refuses, and the layout of its result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(7)


def data(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def outcome(lib, backends, shape, dropout_p):
    query = lib.tensor(data(*shape))
    chosen = [getattr(lib.nn.attention.SDPBackend, b) for b in backends]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns why each fused kernel was not used
        with lib.nn.attention.sdpa_kernel(chosen):
            flags = [lib.backends.cuda.math_sdp_enabled(), lib.backends.cuda.flash_sdp_enabled(),
                     lib.backends.cuda.mem_efficient_sdp_enabled(), lib.backends.cuda.cudnn_sdp_enabled()]
            try:
                lib.nn.functional.scaled_dot_product_attention(query, query, query, dropout_p=dropout_p)
                result = "ran"
            except RuntimeError as error:
                result = str(error)
    after = [lib.backends.cuda.math_sdp_enabled(), lib.backends.cuda.flash_sdp_enabled()]
    return flags, result, after


@pytest.mark.parametrize("backends, shape, dropout_p", [
    (["MATH"], (1, 2, 4, 8), 0.0),
    (["FLASH_ATTENTION"], (1, 2, 4, 8), 0.0),
    (["FLASH_ATTENTION"], (2, 4, 8), 0.0),
    (["FLASH_ATTENTION"], (1, 2, 4, 8), 0.5),
    (["EFFICIENT_ATTENTION"], (1, 2, 4, 8), 0.0),
    (["CUDNN_ATTENTION", "EFFICIENT_ATTENTION"], (1, 2, 4, 8), 0.0),
    (["ERROR"], (1, 2, 4, 8), 0.0),
    (["MATH", "FLASH_ATTENTION"], (2, 4, 8), 0.5),
], ids=["math", "flash", "flash 3-D", "flash dropout", "efficient", "cudnn+efficient", "error", "both"])
def test_the_cpu_refuses_what_torchs_cpu_kernels_refuse(backends, shape, dropout_p):
    assert outcome(scriptc, backends, shape, dropout_p) == outcome(torch, backends, shape, dropout_p)


def test_backend_values_and_a_bad_choice_match_torch():
    assert [(b.name, int(b)) for b in scriptc.nn.attention.SDPBackend] == \
        [(b.name, int(b)) for b in torch.nn.attention.SDPBackend.__members__.values()]
    assert str(scriptc.nn.attention.SDPBackend.MATH) == str(torch.nn.attention.SDPBackend.MATH)
    for lib in (scriptc, torch):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of "
                                                 "SDPBackend instances, got str"):
            with lib.nn.attention.sdpa_kernel("math"):
                pass


def test_switches_and_the_deprecated_sdp_kernel_restore_what_they_change():
    for lib in (scriptc, torch):
        cuda = lib.backends.cuda
        cuda.enable_math_sdp(False)
        try:
            assert not cuda.math_sdp_enabled() and cuda.flash_sdp_enabled()
        finally:
            cuda.enable_math_sdp(True)
        with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
            context = cuda.sdp_kernel(enable_math=False, enable_flash=False)
        with context:
            with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention"):
                lib.nn.functional.scaled_dot_product_attention(*[lib.ones(1, 1, 2, 4)] * 3)
        assert cuda.math_sdp_enabled() and cuda.flash_sdp_enabled()


def heads_from_rows(lib, projected, heads):
    """The SDPA tutorial's query: a chunk of one projection viewed (batch, length, heads, dim), heads first."""
    batch, length, _ = projected.shape
    query, key, value = lib.tensor(projected).chunk(3, -1)
    return [t.view(batch, length, heads, -1).transpose(1, 2) for t in (query, key, value)]


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}], ids=["plain", "causal"])
def test_a_heads_after_rows_query_gives_a_result_laid_out_as_torchs(kwargs):
    projected = data(2, 5, 24)
    results = []
    for lib in (scriptc, torch):
        query, key, value = heads_from_rows(lib, projected, 2)
        out = lib.nn.functional.scaled_dot_product_attention(query, key, value, **kwargs)
        results.append((out.stride(), out.transpose(1, 2).view(2, 5, 8).numpy()))
        plain = lib.nn.functional.scaled_dot_product_attention(query.contiguous(), key, value, **kwargs)
        assert plain.is_contiguous()
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


class RowsThenHeads(scriptc.nn.Module):
    def forward(self, projected):
        batch, length = projected.size(0), projected.size(1)
        query, key, value = projected.chunk(3, -1)
        query = query.view(batch, length, 2, -1).transpose(1, 2)
        key = key.view(batch, length, 2, -1).transpose(1, 2)
        value = value.view(batch, length, 2, -1).transpose(1, 2)
        out = scriptc.nn.functional.scaled_dot_product_attention(query, key, value)
        return out.transpose(1, 2).view(batch, length, -1) * query.stride(1)


def test_scripted_attention_views_its_result_as_eager_code_does():
    projected = scriptc.tensor(data(3, 4, 24))
    scripted = scriptc.jit.script(RowsThenHeads())
    np.testing.assert_allclose(scripted(projected).numpy(), RowsThenHeads()(projected).numpy(), rtol=1e-5)
