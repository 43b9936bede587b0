"""jit.script: the corpus equals eager Python on fresh inputs; nn modules script; errors are ScriptErrors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc as torch

from ..models import ALL, make_inputs
from . import script_corpus
from .script_corpus import CORPUS, MODULES


def _compare(a, b):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _compare(a[k], b[k])
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _compare(x, y)
    elif isinstance(b, torch.Tensor):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)
    else:
        assert a == pytest.approx(b)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_scripted_equals_eager(name):
    make, inputs = CORPUS[name]
    target = make() if name in MODULES else make
    scripted = torch.jit.script(target)
    rng = np.random.default_rng(abs(hash(name)) % 2 ** 32)
    for _ in range(12):
        args = inputs(rng)
        with torch.no_grad():
            expected = target(*args)
        _compare(scripted(*args), expected)


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40


def test_control_flow_is_kept_in_the_graph():
    g = str(torch.jit.script(script_corpus.relu_or_neg).graph)
    assert "prim::If" in g
    g = str(torch.jit.script(script_corpus.data_dependent_trip).graph)
    assert "prim::Loop" in g
    helper = torch.jit.script(script_corpus.calls_helpers)
    assert "prim::Call" in str(helper.graph) and "helper_combine" in helper.functions


def test_exported_methods_and_module_state():
    module = script_corpus.ConstantsModule().eval()
    scripted = torch.jit.script(module)
    x = torch.randn(2, 3)
    _compare(scripted.doubled(x), module.doubled(x))
    assert set(scripted.graphs) == {"forward", "doubled"}
    assert list(scripted.state_dict()) == list(module.state_dict())
    assert "def forward" in scripted.code


def test_training_flag_is_read_at_run_time():
    module = script_corpus.TrainingFlag()
    scripted = torch.jit.script(module)
    x = torch.ones(3)
    assert scripted.train()(x).tolist() == [0, 0, 0]
    assert scripted.eval()(x).tolist() == [2, 2, 2]


@pytest.mark.parametrize("name", sorted(ALL))
def test_test_models_script(name):
    torch.manual_seed(1)
    model = ALL[name]().eval()
    scripted = torch.jit.script(model)
    for batch in (2, 5):
        x = make_inputs(name, batch)
        with torch.no_grad():
            _compare(scripted(x), model(x))


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Linear(3, 2), (4, 3)), (lambda: torch.nn.Conv2d(2, 3, 3, stride=2, padding=1), (1, 2, 6, 6)),
    (lambda: torch.nn.BatchNorm2d(3), (2, 3, 4, 4)), (lambda: torch.nn.LayerNorm(4), (2, 4)),
    (lambda: torch.nn.Embedding(5, 3), None), (lambda: torch.nn.Dropout(0.2), (3, 3)),
    (lambda: torch.nn.ReLU(), (3,)), (lambda: torch.nn.GELU("tanh"), (3,)), (lambda: torch.nn.Tanh(), (3,)),
    (lambda: torch.nn.Sigmoid(), (3,)), (lambda: torch.nn.SiLU(), (3,)), (lambda: torch.nn.Softmax(-1), (2, 3)),
    (lambda: torch.nn.Flatten(), (2, 3, 4)), (lambda: torch.nn.Identity(), (3,)),
    (lambda: torch.nn.MaxPool2d(2), (1, 2, 4, 4)), (lambda: torch.nn.AvgPool2d(2), (1, 2, 4, 4)),
    (lambda: torch.nn.AdaptiveAvgPool2d(1), (1, 2, 4, 4)), (lambda: torch.nn.LSTMCell(3, 4), (2, 3)),
    (lambda: torch.nn.GRUCell(3, 4), (2, 3)), (lambda: torch.nn.LeakyReLU(0.2), (3,)),
    (lambda: torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), (2, 3)),
    (lambda: torch.nn.MultiheadAttention(4, 2), (3, 2, 4)),
])
def test_every_nn_module_scripts(make, shape):
    module = make().eval()
    scripted = torch.jit.script(module)
    if shape is None:
        x = torch.tensor([[0, 4], [2, 1]])
    else:
        x = torch.randn(*shape)
    args = (x, x, x) if isinstance(module, torch.nn.MultiheadAttention) else (x,)
    with torch.no_grad():
        _compare(scripted(*args), module(*args))


def test_batchnorm_train_mode_updates_running_stats_in_script():
    bn = torch.nn.BatchNorm2d(3)
    scripted = torch.jit.script(bn)
    scripted.train()
    x = torch.randn(4, 3, 2, 2) + 2
    scripted(x)
    assert bn.num_batches_tracked.item() == 1 and float(bn.running_mean.mean()) > 0.1


def test_ignored_functions_stay_in_python():
    calls = []

    @torch.jit.ignore
    def side_effect(x):
        calls.append(1)
        return x + 1

    class UsesIgnored(torch.nn.Module):
        def forward(self, x):
            return side_effect(x) * 2

    scripted = torch.jit.script(UsesIgnored())
    assert scripted(torch.ones(2)).tolist() == [4, 4] and calls
    assert scripted._ignored


def test_a_dtype_known_only_at_run_time_types_the_result_as_any_tensor():
    def fn(x, y):
        return (x > 0).to(y.dtype) * 2
    scripted = torch.jit.script(fn)
    assert "Tensor = to.dtype" in str(scripted.graph)  # the dtype is y's, unknown until the call
    optimized = torch.jit.optimize_for_inference(scripted)
    x = torch.tensor([[-1.0, 2.0, 0.5]])
    for dtype in (torch.float64, torch.int32):
        y = torch.ones(1, dtype=dtype)
        for run in (scripted, optimized):
            out = run(x, y)
            assert out.dtype == dtype
            np.testing.assert_array_equal(out.numpy(), fn(x, y).numpy())


def _tensor_varargs(a, b):
    x, y = torch.meshgrid(a, b, indexing="ij")
    return torch.einsum("ij,jk->ik", x, y.t()), torch.einsum("ii", x[:2, :2]), torch.broadcast_tensors(a, a)[0]


def test_tensors_passed_one_by_one_fill_a_tensor_list_parameter():
    a, b = torch.arange(3.0), torch.arange(2.0)
    scripted = torch.jit.script(_tensor_varargs)
    assert "prim::ListConstruct" in str(scripted.graph)
    for got, want in zip(scripted(a, b), _tensor_varargs(a, b)):
        np.testing.assert_allclose(got.numpy(), want.numpy())


def _initialisers_and_warnings(x):
    y = x.clone()
    y[1:].zero_()
    z = x.clone()
    z.fill_(5)
    if x.sum() > 100:
        warnings.warn("a large input", stacklevel=2)
    return y, z


def test_zero_fill_and_warnings_warn_in_scripted_code():
    scripted = torch.jit.script(_initialisers_and_warnings)
    y, z = scripted(torch.ones(3))
    assert y.tolist() == [1.0, 0.0, 0.0] and z.tolist() == [5.0, 5.0, 5.0]
    with pytest.warns(UserWarning, match="a large input"):
        scripted(torch.full((3,), 50.0))
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        torch.ones(3).fill_(torch.ones(2))


def _slices_from_unrolled_tuples(x):
    mask = x.new_zeros((6, 6))
    bounds = ((0, -2), (-2, -1), (-1, None))
    count = 0
    for h in bounds:
        for w in bounds:
            mask[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    end = None
    return mask, [1, 2, 3, 4][1:end]


def test_a_slice_bound_that_is_none_means_to_the_end():
    mask, items = torch.jit.script(_slices_from_unrolled_tuples)(torch.ones(2))
    want_mask, want_items = _slices_from_unrolled_tuples(torch.ones(2))
    assert items == want_items == [2, 3, 4]
    np.testing.assert_array_equal(mask.numpy(), want_mask.numpy())
