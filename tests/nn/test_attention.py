"""MultiheadAttention, scaled_dot_product_attention and the Transformer family against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

from .compare import compare_call, compare_module, constant

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)


def x(*shape):
    return rng.standard_normal(shape).astype(np.float32)



KPM = rng.random((2, 4)) > 0.6
KPM[:, 0] = False
MASK = x(3, 4)

MHA_OPTIONS = [
    (dict(embed_dim=8, num_heads=2), dict()),
    (dict(embed_dim=8, num_heads=2, batch_first=True), dict(need_weights=False)),
    (dict(embed_dim=8, num_heads=2, kdim=5, vdim=3), dict(average_attn_weights=False)),
    (dict(embed_dim=8, num_heads=4, bias=False, add_bias_kv=True, add_zero_attn=True), dict()),
    (dict(embed_dim=8, num_heads=2, add_bias_kv=True), dict(need_weights=False)),
]
MASKS = {"none": lambda heads: {}, "kpm": lambda heads: dict(key_padding_mask=constant(KPM)),
         "float": lambda heads: dict(attn_mask=constant(MASK)),
         "bool+kpm": lambda heads: dict(attn_mask=constant(MASK > 1), key_padding_mask=constant(KPM)),
         "3d": lambda heads: dict(attn_mask=constant(np.repeat(MASK[None], 2 * heads, 0)))}


@pytest.mark.parametrize("masks", list(MASKS))
@pytest.mark.parametrize("options, call", MHA_OPTIONS, ids=["plain", "batch_first", "kdim-vdim", "bias_kv-zero",
                                                            "bias_kv-sdpa"])
def test_multihead_attention_matches_torch(options, call, masks):
    masks = MASKS[masks](options["num_heads"])
    batch_first = options.get("batch_first", False)
    shape = (lambda n, length, e: (n, length, e)) if batch_first else (lambda n, length, e: (length, n, e))
    args = [x(*shape(2, 3, 8)), x(*shape(2, 4, options.get("kdim", 8))), x(*shape(2, 4, options.get("vdim", 8)))]
    compare_module(lambda T: T.nn.MultiheadAttention(**options), args,
                   {**call, **masks}, modes=("train",))


def test_unbatched_and_causal_hint():
    compare_module(lambda T: T.nn.MultiheadAttention(8, 2), [x(3, 8), x(4, 8), x(4, 8)],
                   {"key_padding_mask": constant(KPM[0])}, modes=("eval",))
    causal = np.triu(np.full((3, 3), -np.inf, dtype=np.float32), 1)
    compare_module(lambda T: T.nn.MultiheadAttention(8, 2), [x(3, 2, 8), x(3, 2, 8), x(3, 2, 8)],
                   {"attn_mask": constant(causal), "is_causal": True, "need_weights": False}, modes=("eval",))


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3},
                                    {"attn_mask": constant(MASK > 0)}, {"attn_mask": constant(MASK)},
                                    {"attn_mask": constant(MASK), "is_causal": False}])
def test_scaled_dot_product_attention_matches_torch(kwargs):
    compare_call(lambda T, q, k, v, **kw: T.nn.functional.scaled_dot_product_attention(q, k, v, **kw),
                 [x(2, 2, 3, 5), x(2, 2, 4, 5), x(2, 2, 4, 6)], kwargs)


def test_sdpa_grouped_query_attention_and_fully_masked_rows():
    compare_call(lambda T, q, k, v: T.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                 [x(1, 4, 3, 5), x(1, 2, 4, 5), x(1, 2, 4, 5)])
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    compare_call(lambda T, q, k, v, m: T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
                 [x(1, 2, 3, 5), x(1, 2, 4, 5), x(1, 2, 4, 5), constant(mask)])


TRANSFORMERS = [
    dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0),
    dict(d_model=8, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
         norm_first=True, activation="gelu", batch_first=True, bias=False, layer_norm_eps=1e-3),
]


def _square_mask(size):
    return lambda T: T.nn.Transformer.generate_square_subsequent_mask(size)


@pytest.mark.parametrize("options", TRANSFORMERS, ids=["post-norm", "pre-norm-gelu-batch-first"])
def test_transformer_matches_torch(options):
    batch_first = options.get("batch_first", False)
    src, tgt = (x(2, 5, 8), x(2, 4, 8)) if batch_first else (x(5, 2, 8), x(4, 2, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: enable_nested_tensor is True, but ...
        compare_module(lambda T: T.nn.Transformer(**options), [src, tgt],
                       {"tgt_mask": _square_mask(4), "src_key_padding_mask": constant(KPM.repeat(2, 1)[:, :5]),
                        "memory_key_padding_mask": constant(KPM.repeat(2, 1)[:, :5]), "tgt_is_causal": True},
                       rtol=2e-5, atol=2e-5, grad_atol=5e-5)


def test_encoder_layer_with_module_activation_and_encoder_mask():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_module(lambda T: T.nn.TransformerEncoder(T.nn.TransformerEncoderLayer(8, 2, 16, 0.0,
                                                                                      activation=T.nn.GELU()), 2),
                       [x(5, 2, 8)], {"mask": _square_mask(5)}, rtol=2e-5, atol=2e-5, grad_atol=5e-5)
    causal = scriptc.nn.Transformer.generate_square_subsequent_mask(3)
    assert causal.tolist() == torch.nn.Transformer.generate_square_subsequent_mask(3).tolist()


@pytest.mark.parametrize("call, error, message", [
    (lambda T: T.nn.MultiheadAttention(8, 3), AssertionError, "embed_dim must be divisible by num_heads"),
    (lambda T: T.nn.MultiheadAttention(0, 3), ValueError, "embed_dim and num_heads must be greater than 0"),
    (lambda T: T.nn.MultiheadAttention(8, 2)(T.zeros(3, 2, 8), T.zeros(3, 2, 8), T.zeros(3, 2, 8),
                                             attn_mask=T.zeros(3, 4)), RuntimeError,
     "The shape of the 2D attn_mask is"),
    (lambda T: T.nn.MultiheadAttention(8, 2)(T.zeros(3, 2, 8), T.zeros(3, 2, 8), T.zeros(3, 2, 8),
                                             attn_mask=T.zeros(3, 3, dtype=T.int64)), AssertionError,
     "only bool and floating types of attn_mask are supported"),
    (lambda T: T.nn.MultiheadAttention(8, 2)(T.zeros(3, 2, 8), T.zeros(3, 2, 8), T.zeros(3, 2, 8), is_causal=True),
     RuntimeError, "Need attn_mask if specifying the is_causal hint."),
    (lambda T: T.nn.MultiheadAttention(8, 2)(T.zeros(3, 2, 8), T.zeros(3, 8), T.zeros(3, 8)), AssertionError,
     "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D tensors"),
    (lambda T: T.nn.TransformerEncoderLayer(8, 2, activation="tanh"), RuntimeError,
     "activation should be relu/gelu, not tanh"),
    (lambda T: T.nn.Transformer(8, 2, 1, 1, 16)(T.zeros(3, 2, 8), T.zeros(3, 3, 8)), RuntimeError,
     "the batch number of src and tgt must be equal"),
])
def test_errors_match_torch(call, error, message):
    for T in (torch, scriptc):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(error) as info:
                call(T)
        assert message in str(info.value)
