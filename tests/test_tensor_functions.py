"""Tensor's self-inspection methods, the in-place shape ops, the function forms of Tensor methods and
the namespace constants, against torch 2.13."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def _keep_torch_distribution_validation():
    """Real torch.cond imports torch._dynamo, which turns torch.distributions' argument validation off for
    the whole process; later tests compare against torch's validation errors."""
    yield
    torch.distributions.Distribution.set_default_validate_args(True)


def both(fn):
    """fn(T) under scriptc and under torch."""
    return fn(scriptc), fn(torch)


def same(fn):
    ours, theirs = both(fn)
    check_same(ours, theirs)


def check_same(ours, theirs):
    """Equal values of corresponding kinds: scriptc tensors where torch gives tensors, equal dtypes."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, scriptc.Tensor) and ours.dtype.name == str(theirs.dtype).split(".")[1]
        if theirs.is_floating_point():
            np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    elif isinstance(theirs, (tuple, list)) and not isinstance(theirs, torch.Size):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            check_same(a, b)
    elif isinstance(theirs, str):
        assert ours == theirs
    else:
        assert tuple(ours) == tuple(theirs) if isinstance(theirs, torch.Size) else ours == theirs


@pytest.mark.parametrize("fn", [
    lambda T: T.zeros(5)[2:].storage_offset(),
    lambda T: T.zeros(4, 6)[1:, 2:].storage_offset(),
    lambda T: T.zeros(4, 6).t()[1].storage_offset(),
    lambda T: T.zeros(2).get_device(),
    lambda T: T.zeros(2).is_cpu,
    lambda T: T.zeros(2).is_pinned(),
    lambda T: (T.zeros(2).is_quantized, T.zeros(2).is_nested, T.zeros(2).is_sparse_csr, T.zeros(2).is_mkldnn),
    lambda T: [T.zeros(1, dtype=d).is_signed() for d in (T.uint8, T.bool, T.int8, T.float32, T.bfloat16)],
    lambda T: (T.tensor([0.0]).is_nonzero(), T.tensor(3).is_nonzero(), T.is_nonzero(T.tensor([True]))),
    lambda T: (T.zeros(2, 3).is_same_size(T.ones(2, 3)), T.is_same_size(T.zeros(2), T.zeros(3))),
    lambda T: T.arange(6.0).reshape(2, 3).sum_to_size(1, 3),
    lambda T: T.arange(6.0).reshape(2, 3).sum_to_size(3),
    lambda T: T.arange(6.0).reshape(2, 3).sum_to_size(2, 1),
    lambda T: T.arange(5).split_with_sizes([2, 3]),
    lambda T: T.arange(6).reshape(2, 3).split_with_sizes([1, 2], dim=1),
    lambda T: T.tensor([1.0, 2.0]).isreal(),
    lambda T: T.arange(6.0).reshape(2, 3).adjoint(),
    lambda T: (T.ones(2).short().dtype == T.int16, T.ones(2).char().dtype == T.int8, T.ones(2).byte().dtype == T.uint8),
    lambda T: T.zeros(2, dtype=T.int16).type(),
    lambda T: T.zeros(2, 3).new(2, 3).shape,
    lambda T: T.zeros(2, 3, dtype=T.int64).new([2.5, 1.0]),
    lambda T: T.zeros(2).new((4, 5)),
    lambda T: T.zeros(2).new().shape,
])
def test_inspection_matches_torch(fn):
    same(fn)


@pytest.mark.parametrize("call, message", [
    (lambda T: T.zeros(2).is_nonzero(), "more than one value is ambiguous"),
    (lambda T: T.zeros(0).is_nonzero(), "no values is ambiguous"),
    (lambda T: T.zeros(3).sum_to_size(2), "is not expandable to size"),
    (lambda T: T.zeros(4).split_with_sizes([1, 2]), "split_sizes to sum exactly to 4"),
    (lambda T: T.zeros(3).adjoint(), "only supported on matrices or batches of matrices. Got 1-D tensor"),
    (lambda T: T.ones(4).renorm(2, 0, 1.0), "renorm: input needs at least 2 dimensions, got 1 dimensions"),
])
def test_inspection_errors_match_torch(call, message):
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match=message):
            call(T)


@pytest.mark.parametrize("call, error, message", [
    (lambda T: T.zeros(2).new(2.0), TypeError, "new\\(\\): data must be a sequence \\(got float\\)"),
    (lambda T: T.ones(2, 3).renorm(2, 2, 1.0), IndexError, "Dimension out of range"),
])
def test_argument_errors_match_torch(call, error, message):
    for T in (scriptc, torch):
        with pytest.raises(error, match=message):
            call(T)


@pytest.mark.parametrize("method, args, shape", [
    ("t_", (), (3, 2)), ("transpose_", (0, 1), (3, 2)), ("swapaxes_", (1, 0), (3, 2)), ("swapdims_", (0, 1), (3, 2)),
    ("unsqueeze_", (1,), (2, 1, 3)), ("squeeze_", (), (2, 3)),
])
def test_inplace_shape_ops_keep_the_object_and_its_gradient(method, args, shape):
    for T in (scriptc, torch):
        leaf = T.arange(6.0).reshape(2, 3).requires_grad_()
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            getattr(leaf, method)(*args)
        value = leaf * 2
        out = getattr(value, method)(*args)
        assert out is value and tuple(value.shape) == shape
        (value * T.arange(6.0).reshape(shape)).sum().backward()
        if T is scriptc:
            ours = leaf.grad.numpy()
        else:
            np.testing.assert_array_equal(ours, leaf.grad.numpy())


def test_inplace_shape_op_in_a_traced_function():
    def f(x):
        y = x + 1
        y.t_()
        return y * 2

    x = scriptc.randn(2, 3)
    traced = scriptc.jit.trace(f, (x,))
    other = scriptc.randn(4, 5)
    np.testing.assert_array_equal(traced(other).numpy(), f(other).numpy())


@pytest.mark.parametrize("name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "less_equal_",
                                  "not_equal_", "logical_and_", "logical_or_", "logical_xor_"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_inplace_comparisons_write_into_self(name, dtype):
    a = np.array([[1, 2, 3], [0, 5, -1]])
    b = np.array([2, 2, 0])
    ours = scriptc.tensor(a, dtype=getattr(scriptc, dtype))
    theirs = torch.tensor(a, dtype=getattr(torch, dtype))
    assert getattr(ours, name)(scriptc.tensor(b)) is ours
    getattr(theirs, name)(torch.tensor(b))
    assert ours.dtype.name == dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_inplace_comparison_cuts_the_gradient():
    x = scriptc.randn(3, requires_grad=True)
    weight = scriptc.randn(3, requires_grad=True)
    y = x * 1
    y.gt_(0)
    (y * weight).sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy(), (x.detach().numpy() > 0).astype(np.float32))
    assert x.grad is None or not x.grad.numpy().any()


@pytest.mark.parametrize("name, args", [
    ("relu_", ()), ("sigmoid_", ()), ("tanh_", ()), ("exp_", ()), ("clamp_", (-0.5, 0.5)), ("fill_", (3.0,)),
    ("zero_", ()), ("abs_", ()), ("arcsin_", ()), ("negative_", ()), ("fix_", ()), ("sqrt_", ()),
    ("threshold_", (0.1, 20.0)), ("selu_", ()), ("celu_", ()), ("square_", ()),
])
def test_inplace_functions_in_the_namespace(name, args):
    data = np.random.default_rng(3).uniform(0.1, 0.9, (2, 3)).astype(np.float32)
    ours, theirs = scriptc.tensor(data), torch.tensor(data)
    assert getattr(scriptc, name)(ours, *args) is ours
    getattr(torch, name)(theirs, *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_functions_match_torch(accumulate):
    """torch.index_put / index_put_ as functions, eager and scripted (upstream test_misc.test_hacked_twin)."""
    rng = np.random.default_rng(4)
    x, index, values = rng.standard_normal(6).astype(np.float32), np.array([1, 4, 1]), np.ones(3, np.float32)

    def run(T):
        def put(x, index, values, accumulate: bool):
            return T.index_put(x, [index], values, accumulate=accumulate)
        target = T.tensor(x)
        out = T.index_put_(target, [T.tensor(index)], T.tensor(values), accumulate=accumulate)
        assert out is target
        args = (T.tensor(x), T.tensor(index), T.tensor(values), accumulate)
        return put(*args).numpy(), T.jit.script(put)(*args).numpy(), target.numpy()

    for ours, theirs in zip(*both(run)):
        np.testing.assert_array_equal(ours, theirs)


def test_every_declared_inplace_function_exists():
    from scriptc import bindings
    from scriptc.ops import INPLACE_FUNCTIONS

    assert INPLACE_FUNCTIONS <= set(bindings.FUNCTIONS)
    assert all(hasattr(torch, name) for name in INPLACE_FUNCTIONS)


def test_namespace_constants():
    assert (scriptc.pi, scriptc.e, scriptc.inf) == (torch.pi, torch.e, torch.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(scriptc.nan) and scriptc.newaxis is None is torch.newaxis
    assert scriptc.zeros(2, 3)[:, scriptc.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize("fn", [
    lambda T: T.unravel_index(T.tensor([0, 4, 5, 7, -1]), (2, 3)),
    lambda T: T.unravel_index(T.tensor([[4, 5]]), (2, 3)),
    lambda T: T.unravel_index(T.tensor(3), 6),
    lambda T: T.unravel_index(T.tensor([11, 23]), (2, 3, 4)),
    lambda T: T.scalar_tensor(3),
    lambda T: T.scalar_tensor(3, dtype=T.int64),
    lambda T: T.asarray([1, 2.5]),
    lambda T: T.asarray(np.arange(3)),
    lambda T: T.asarray(T.tensor([1, 2]), dtype=T.float64),
    lambda T: T.detach(T.ones(2, requires_grad=True)),
    lambda T: T.is_signed(T.zeros(1, dtype=T.uint8)),
    lambda T: T.cosine_similarity(T.ones(2, 3), T.arange(6.0).reshape(2, 3)),
    lambda T: T.pdist(T.arange(6.0).reshape(3, 2)),
])
def test_function_forms_match_torch(fn):
    same(fn)


def test_asarray_aliases_and_copies_as_torch():
    for T in (scriptc, torch):
        source = T.tensor([1, 2])
        assert T.asarray(source) is source
        assert T.asarray(source, copy=True).data_ptr() != source.data_ptr()
        array = np.arange(3.0)
        T.asarray(array)[0] = 7
        assert array[0] == 7
        with pytest.raises(ValueError, match="can't alias tensor with dtype 'Long' into dtype 'Float'"):
            T.asarray(source, dtype=T.float32, copy=False)
        assert T.asarray([1.0], requires_grad=True).requires_grad


def test_range_is_inclusive_and_deprecated():
    for T in (scriptc, torch):
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            values = T.range(1, 2, 0.25)
        np.testing.assert_array_equal(values.numpy(), [1.0, 1.25, 1.5, 1.75, 2.0])
        assert values.dtype == T.float32


def test_unravel_index_errors():
    for T in (scriptc, torch):
        with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
            T.unravel_index(T.tensor([1.0]), (2, 3))
        with pytest.raises(ValueError, match="'shape' cannot have negative values"):
            T.unravel_index(T.tensor(1), (2, -3))


def test_typename():
    assert scriptc.typename(scriptc.zeros(1, dtype=scriptc.int64)) == "torch.LongTensor"
    assert scriptc.typename(3) == "int" == torch.typename(3)
    assert scriptc.typename(scriptc.nn.Linear) == "torch.nn.modules.linear.Linear"


@pytest.mark.parametrize("build", [
    lambda T: [T.float32, T.Size([1]), T.device("cpu"), T.Tensor, T.Generator(), T.strided, T.channels_last],
    lambda T: [T.finfo(T.float32), T.no_grad(), T.nn.Parameter, T.optim.SGD, T.utils.data.DataLoader],
    lambda T: [T.nn.Linear(1, 1), T.nn.MultiheadAttention, T.nn.LSTM, T.nn.Sequential, T.nn.Module],
    lambda T: [T.optim.lr_scheduler.StepLR, T.distributions.Normal, T.autograd.Function, T.nn.utils.rnn.PackedSequence],
])
def test_typename_names_classes_by_torchs_path(build):
    assert [scriptc.typename(o) for o in build(scriptc)] == [torch.typename(o) for o in build(torch)]


def test_lazy_names_match_the_module():
    from scriptc import _LAZY_NAMES, tensor_functions

    assert _LAZY_NAMES["scriptc.tensor_functions"] == set(tensor_functions.__all__)


@pytest.mark.parametrize("fn", [
    lambda T: T.gradient(T.tensor([1.0, 4.0, 9.0, 16.0, 25.0]), spacing=2.0),
    lambda T: T.gradient(T.tensor([1.0, 4.0, 9.0, 16.0, 25.0]), spacing=(T.tensor([0.0, 1.0, 3.0, 4.0, 7.0]),),
                         edge_order=2),
    lambda T: T.gradient(T.tensor([1.0, 4.0, 9.0, 16.0, 25.0]), spacing=(T.tensor([0.0, 1.0, 3.0, 4.0, 7.0]),)),
    lambda T: T.gradient(T.arange(12.0).reshape(3, 4) ** 2, dim=1, edge_order=2),
    lambda T: T.gradient(T.arange(12.0).reshape(3, 4) ** 2, spacing=[1.0, 2.0]),
    lambda T: T.gradient(T.arange(12).reshape(3, 4)),
    lambda T: T.trapz(T.tensor([1.0, 2.0, 4.0])),
    lambda T: T.renorm(T.arange(6.0).reshape(2, 3), 1, 0, 5.0),
    lambda T: T.arange(24.0).reshape(2, 3, 4).renorm(2, 1, 10.0),
    lambda T: T.arange(6.0).reshape(2, 3).cov(correction=0),
    lambda T: T.tensor([[1.0, 2.0, 4.0], [3.0, 1.0, 0.0]]).corrcoef(),
    lambda T: T.cholesky_solve(T.tensor([[1.0], [2.0]]), T.linalg.cholesky(T.tensor([[4.0, 2.0], [2.0, 3.0]]))),
    lambda T: T.cholesky_solve(T.ones(2, 2, 1), T.linalg.cholesky(T.tensor([[4.0, 2.0], [2.0, 3.0]])).mT,
                               upper=True),
    lambda T: T.linalg.cholesky(T.tensor([[4.0, 2.0], [2.0, 3.0]])).cholesky_inverse(),
    lambda T: T.nonzero_static(T.tensor([[0, 1], [1, 1]]), size=4),
    lambda T: T.nonzero_static(T.tensor([0, 1, 1]), size=1, fill_value=9),
    lambda T: T.empty_strided((2, 3), (1, 2)).stride(),
    lambda T: T.empty_permuted((2, 3, 4), (0, 2, 1)).stride(),
    lambda T: T.slice_copy(T.arange(10), 0, 2, 8, 3),
    lambda T: T.expand_copy(T.ones(1, 2), (3, 2)),
    lambda T: T.split_copy(T.arange(5), 2),
    lambda T: T.unbind_copy(T.arange(4).reshape(2, 2), 1),
    lambda T: T.view_copy(T.arange(4), (2, 2)),
    lambda T: T.transpose_copy(T.arange(6).reshape(2, 3), 0, 1),
    lambda T: T.arange(6).unsafe_chunk(3)[2],
    lambda T: T.unsafe_split(T.arange(5), 2),
    lambda T: T.cond(T.tensor(False), lambda x: x + 1, lambda x: x - 1, (T.ones(2),)),
    lambda T: T.cond(True, lambda x, y: x * y, lambda x, y: x, (T.full((2,), 3.0), T.full((2,), 2.0))),
])
def test_composites_match_torch(fn):
    same(fn)


def test_copy_forms_do_not_share_memory():
    source = scriptc.arange(6.0).reshape(2, 3)
    for copy in (scriptc.view_copy(source, (3, 2)), scriptc.t_copy(source), scriptc.select_copy(source, 0, 1)):
        copy.fill_(-1)
    assert source.min().item() == 0.0


def test_renorm_and_gradient_carry_gradients():
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).requires_grad_()
    ours = scriptc.arange(6.0, dtype=scriptc.float64).reshape(2, 3).requires_grad_()
    for T, t in ((torch, x), (scriptc, ours)):
        (T.renorm(t, 2, 0, 3.0) * T.arange(6.0, dtype=T.float64).reshape(2, 3)).sum().backward()
        (T.gradient(t * t, dim=1, edge_order=2)[0]).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), x.grad.numpy(), rtol=1e-6)


def test_as_strided_views_storage_and_errors():
    for T in (scriptc, torch):
        x = T.arange(12.0).reshape(3, 4)
        window = x.as_strided((2, 2), (1, 1))
        window[0, 1] = 100.0
        assert x[0, 1].item() == 100.0
        assert x[1:].as_strided((2,), (1,)).tolist() == [4.0, 5.0]
        with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
            x.as_strided((4, 4), (4, 1))
        with pytest.raises(RuntimeError, match="Negative strides are not supported"):
            x.as_strided((2,), (-1,))


def test_histogram_weights_density_and_errors():
    values, weights = np.array([1.0, 2.0, 1.0, 4.0], np.float32), np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    for bins in (3, np.array([0.0, 1.5, 5.0], np.float32)):
        ours = scriptc.histogram(scriptc.tensor(values), scriptc.tensor(bins) if isinstance(bins, np.ndarray) else bins,
                                 weight=scriptc.tensor(weights), density=True)
        theirs = torch.histogram(torch.tensor(values), torch.tensor(bins) if isinstance(bins, np.ndarray) else bins,
                                 weight=torch.tensor(weights), density=True)
        check_same(tuple(ours), tuple(theirs))
        check_same(ours.bin_edges, theirs.bin_edges)
    for T in (scriptc, torch):
        with pytest.raises(RuntimeError, match="bins must be > 0, but got -1"):
            T.histogram(T.tensor([1.0]), -1)
        with pytest.raises(RuntimeError, match="min should not exceed max, but got min 3 max 1"):
            T.histogram(T.tensor([1.0]), 2, range=(3.0, 1.0))
        with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
            T.histogram(T.tensor([1, 2]), 2)


def test_size_slices_and_sums_stay_sizes():
    for T in (scriptc, torch):
        shape = T.zeros(2, 3, 4).shape
        for value in (shape[1:], shape + (5,), (5,) + shape, shape[::-1]):
            assert type(value) is type(shape)
        assert shape[0] == 2 and type(shape[0]) is int
    assert repr(scriptc.zeros(2, 3).shape[1:]) == "torch.Size([3])"
