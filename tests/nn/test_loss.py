"""Every loss against torch: module and functional, each reduction and weight option, values and gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

from .compare import assert_same_error, compare_call, compare_module, constant

torch = pytest.importorskip("torch")

rng = np.random.default_rng(2)


def x(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def prob(*shape):
    return rng.uniform(0.05, 0.95, shape).astype(np.float32)


def sign(*shape):
    return np.where(rng.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


def classes(n, *shape):
    return rng.integers(0, n, shape)


def _softmax(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return (e / e.sum(axis=dim, keepdims=True)).astype(np.float32)



# (loss name, module kwargs, forward arguments): each is checked for every reduction through the module and F.
CASES = [
    ("L1Loss", {}, [x(3, 4), x(3, 4)]),
    ("MSELoss", {}, [x(3, 4), x(3, 4)]),
    ("SmoothL1Loss", {"beta": 0.5}, [x(3, 4), x(3, 4)]),
    ("SmoothL1Loss", {"beta": 0.0}, [x(3, 4), x(3, 4)]),
    ("HuberLoss", {"delta": 0.7}, [x(3, 4), x(3, 4)]),
    ("BCELoss", {}, [prob(3, 4), prob(3, 4)]),
    ("BCELoss", {"weight": constant(x(4, lo=0.1))}, [prob(3, 4), constant(prob(3, 4))]),
    ("BCEWithLogitsLoss", {}, [x(3, 4, lo=-30, hi=30), prob(3, 4)]),
    ("BCEWithLogitsLoss", {"weight": constant(x(3, 4, lo=0.1)), "pos_weight": constant(x(4, lo=0.1))},
     [x(3, 4), prob(3, 4)]),
    ("CrossEntropyLoss", {}, [x(5, 4), classes(4, 5)]),
    ("CrossEntropyLoss", {"weight": constant(x(4, lo=0.1)), "ignore_index": 1, "label_smoothing": 0.2},
     [x(5, 4, 3, 2), classes(4, 5, 3, 2)]),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, [x(5, 4, 3), constant(_softmax(x(5, 4, 3), 1))]),
    ("CrossEntropyLoss", {}, [x(4), np.array(2)]),
    ("NLLLoss", {"weight": constant(x(4, lo=0.1)), "ignore_index": 0}, [x(5, 4, 3), classes(4, 5, 3)]),
    ("KLDivLoss", {}, [x(3, 4), prob(3, 4)]),
    ("KLDivLoss", {"log_target": True}, [x(3, 4), x(3, 4)]),
    ("PoissonNLLLoss", {}, [x(3, 4), x(3, 4, lo=0, hi=5)]),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, [x(3, 4, lo=0.1), x(3, 4, lo=0, hi=5)]),
    ("GaussianNLLLoss", {}, [x(3, 4), x(3, 4), x(3, 4, lo=0.1)]),
    ("GaussianNLLLoss", {"full": True, "eps": 0.3}, [x(3, 4), x(3, 4), x(3, 1, lo=0.1)]),
    ("GaussianNLLLoss", {}, [x(3, 4), x(3, 4), x(3, lo=0.1)]),
    ("MarginRankingLoss", {"margin": 0.3}, [x(6), x(6), constant(sign(6))]),
    ("HingeEmbeddingLoss", {"margin": 0.5}, [x(3, 4), constant(sign(3, 4))]),
    ("CosineEmbeddingLoss", {"margin": 0.2}, [x(4, 5), x(4, 5), constant(sign(4))]),
    ("CosineEmbeddingLoss", {}, [x(5), x(5), constant(np.array(-1.0, dtype=np.float32))]),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1.0, "swap": True}, [x(4, 5), x(4, 5), x(4, 5)]),
    ("TripletMarginLoss", {}, [x(4, 5), x(4, 5), x(4, 5)]),
    ("TripletMarginWithDistanceLoss", {"swap": True}, [x(4, 5), x(4, 5), x(4, 5)]),
    ("MultiLabelMarginLoss", {}, [x(3, 5), np.array([[3, 0, -1, 1, 1], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0]])]),
    ("MultiLabelMarginLoss", {}, [x(4), np.array([2, 1, -1, 0])]),
    ("MultiLabelSoftMarginLoss", {"weight": constant(x(4, lo=0.1))}, [x(3, 4), constant((sign(3, 4) > 0).astype(np.float32))]),
    ("MultiMarginLoss", {}, [x(5, 4), classes(4, 5)]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": constant(x(4, lo=0.1))}, [x(5, 4), classes(4, 5)]),
    ("SoftMarginLoss", {}, [x(3, 4), constant(sign(3, 4))]),
]


def _kwargs(T, kw):
    return {k: v(T) if callable(v) else v for k, v in kw.items()}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name, kw, args", CASES, ids=[c[0] + "-" + "-".join(map(str, c[1])) for c in CASES])
def test_loss_module_matches_torch(name, kw, args, reduction):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # KLDivLoss(reduction='mean') warns, in both
        compare_module(lambda T: getattr(T.nn, name)(reduction=reduction, **_kwargs(T, kw)), args, modes=("train",),
                       rtol=2e-5, atol=2e-5)


def test_kl_div_batchmean_and_warning():
    compare_call(lambda T, a, b: T.nn.functional.kl_div(a, b, reduction="batchmean"), [x(3, 4), prob(3, 4)])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        scriptc.nn.functional.kl_div(scriptc.zeros(2, 2), scriptc.ones(2, 2))


def test_legacy_size_average_and_reduce():
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        compare_call(lambda T, a, b: T.nn.functional.l1_loss(a, b, size_average=size_average, reduce=reduce),
                     [x(3, 4), x(3, 4)])
        assert scriptc.nn.MSELoss(size_average, reduce).reduction == torch.nn.MSELoss(size_average, reduce).reduction


def test_element_weights_of_l1_mse_huber():
    w = constant(x(3, 4, lo=0.1))
    for name, extra in [("l1_loss", {}), ("mse_loss", {}), ("huber_loss", {"delta": 0.5})]:
        for reduction in ("mean", "sum", "none"):
            compare_call(lambda T, a, b, w: getattr(T.nn.functional, name)(a, b, reduction=reduction, weight=w,
                                                                           **extra),
                         [x(3, 4), x(3, 4), w])


def _ctc_case(T, logits, targets, input_lengths, target_lengths, **kw):
    return T.nn.functional.ctc_loss(logits.log_softmax(2), targets, input_lengths, target_lengths, **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_torch_through_log_softmax(reduction):
    logits = x(12, 3, 5)
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]])
    compare_call(lambda T, lg: _ctc_case(T, lg, T.tensor(targets), T.tensor([12, 9, 11]), T.tensor([4, 2, 4]),
                                         reduction=reduction), [logits], rtol=1e-4, atol=1e-5)
    flat = np.array([1, 2, 2, 3, 4, 1, 3, 3, 3, 1])
    compare_call(lambda T, lg: _ctc_case(T, lg, T.tensor(flat), [12, 9, 11], [4, 2, 4], reduction=reduction,
                                         blank=0), [logits], rtol=1e-4, atol=1e-5)


def test_ctc_loss_zero_infinity_and_unbatched():
    logits = x(3, 2, 4)
    targets = np.array([[1, 2, 1, 2], [3, 3, 0, 0]])        # the first cannot fit in 3 steps
    compare_call(lambda T, lg: _ctc_case(T, lg, T.tensor(targets), T.tensor([3, 3]), T.tensor([4, 2]),
                                         zero_infinity=True, reduction="none"), [logits], rtol=1e-4)
    compare_call(lambda T, lg: T.nn.functional.ctc_loss(lg.log_softmax(1), T.tensor([1, 2]), T.tensor(5),
                                                        T.tensor(2), reduction="sum"), [x(5, 3)], rtol=1e-4)
    assert repr(scriptc.nn.CTCLoss(blank=1)) == "CTCLoss()"


@pytest.mark.parametrize("call, error, message", [
    (lambda T: T.nn.functional.binary_cross_entropy(T.full([2], 1.5), T.ones(2)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda T: T.nn.functional.binary_cross_entropy(T.full([2], 0.5), T.ones(3)), ValueError,
     "that is different to the input size"),
    (lambda T: T.nn.functional.binary_cross_entropy_with_logits(T.zeros(2), T.ones(3)), ValueError,
     "must be the same as input size"),
    (lambda T: T.nn.functional.l1_loss(T.zeros(2), T.ones(2), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda T: T.nn.functional.multi_margin_loss(T.zeros(2, 3), T.tensor([0, 1]), p=3), ValueError,
     "only p == 1 and p == 2 supported"),
    (lambda T: T.nn.functional.triplet_margin_loss(T.zeros(2, 3), T.zeros(2, 3), T.zeros(2, 3), margin=0),
     ValueError, "margin must be greater than 0, got 0"),
    (lambda T: T.nn.functional.triplet_margin_loss(T.zeros(2, 3), T.zeros(3), T.zeros(2, 3)), RuntimeError,
     "The anchor, positive, and negative tensors are expected to have the same number of dimensions"),
    (lambda T: T.nn.functional.margin_ranking_loss(T.zeros(2), T.zeros(2, 1), T.ones(2)), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension"),
    (lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(2, 3), T.zeros(2, 3), T.ones(3, 2)), ValueError,
     "var is of incorrect size"),
    (lambda T: T.nn.functional.gaussian_nll_loss(T.zeros(2, 3), T.zeros(2, 3), -T.ones(2, 3)), ValueError,
     "var has negative entry/entries"),
    (lambda T: T.nn.functional.cosine_embedding_loss(T.zeros(2, 3), T.zeros(2, 3), T.ones(2, 1)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda T: T.nn.functional.smooth_l1_loss(T.zeros(2), T.zeros(2), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda T: T.nn.functional.nll_loss(T.zeros(3, 4), T.tensor([0, 1])), ValueError,
     "Expected input batch_size (3) to match target batch_size (2)."),
    (lambda T: T.nn.functional.ctc_loss(T.zeros(3, 1, 2), T.tensor([[1]]), T.tensor([3]), T.tensor([1]), blank=2),
     RuntimeError, "blank must be in label range"),
    (lambda T: T.nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2 supported"),
])
def test_errors_match_torch(call, error, message):
    assert_same_error(call, error, message)


def test_size_mismatch_warns_as_torch():
    with pytest.warns(UserWarning, match="Using a target size"):
        scriptc.nn.functional.mse_loss(scriptc.zeros(3, 1), scriptc.zeros(3))


def test_loss_reprs():
    for name in ("L1Loss", "BCEWithLogitsLoss", "CrossEntropyLoss", "TripletMarginLoss", "CTCLoss"):
        assert repr(getattr(scriptc.nn, name)()) == repr(getattr(torch.nn, name)())
    weighted = scriptc.nn.CrossEntropyLoss(weight=scriptc.ones(3))
    assert list(weighted.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict())
