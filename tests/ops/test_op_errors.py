"""Bad input to the general ops raises torch's error type with torch's words (checked against torch 2.13 too)."""

from __future__ import annotations

import pytest

import scriptc

# (call written against a torch-like module `torch`, exception type, text the message contains)
ERRORS = [
    (lambda torch: torch.ones(2, 3, dtype=torch.int64).expand(3), RuntimeError,
     "expand(torch.LongTensor{[2, 3]}, size=[3]): the number of sizes provided"),
    (lambda torch: torch.broadcast_to(torch.ones(1, 3), (-1, 2, 3)), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    (lambda torch: torch.arange(3).mean(), RuntimeError, "Input dtype must be either a floating point or complex "
                                                         "dtype. Got: Long"),
    (lambda torch: torch.arange(3).std(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda torch: torch.var_mean(torch.arange(3)), RuntimeError, "var_mean only support floating point"),
    (lambda torch: torch.softmax(torch.arange(3), 0), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda torch: torch.bitwise_and(torch.ones(2), torch.ones(2)), NotImplementedError,
     "\"bitwise_and_cpu\" not implemented for 'Float'"),
    (lambda torch: torch.tensor([1.0]) << 1, NotImplementedError, "\"lshift_cpu\" not implemented for 'Float'"),
    (lambda torch: torch.bitwise_not(torch.tensor([1.0])), NotImplementedError, "\"bitwise_not_cpu\""),
    (lambda torch: torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64)), RuntimeError,
     "Float did not match Double"),
    (lambda torch: torch.isclose(torch.ones(2), torch.ones(2), rtol=-1), RuntimeError,
     "rtol must be greater than or equal to zero, but got -1"),
    (lambda torch: torch.frac(torch.tensor([1, 2])), NotImplementedError, "\"frac_cpu\" not implemented for 'Long'"),
    (lambda torch: torch.round(torch.tensor([1, 2]), decimals=1), NotImplementedError, "\"round_cpu\""),
    (lambda torch: torch.fmod(torch.tensor([5, 3]), torch.tensor([2, 0])), RuntimeError, "ZeroDivisionError"),
    (lambda torch: torch.hypot(torch.tensor([1]), torch.tensor([2])), NotImplementedError, "\"hypot_cpu\""),
    (lambda torch: torch.logaddexp(torch.tensor([1]), torch.tensor([2])), NotImplementedError, "\"logaddexp_cpu\""),
    (lambda torch: torch.lerp(torch.ones(1), torch.ones(1, dtype=torch.float64), 0.5), RuntimeError,
     "expected dtype float for `end` but got dtype double"),
    (lambda torch: torch.heaviside(torch.ones(2), torch.ones(2, dtype=torch.int64)), RuntimeError,
     "heaviside is not yet implemented for tensors with different dtypes."),
    (lambda torch: torch.polygamma(-1, torch.ones(2)), RuntimeError, "polygamma(n, x) does not support negative n."),
    (lambda torch: torch.tril(torch.ones(3)), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda torch: torch.logcumsumexp(torch.tensor([1, 2]), 0), NotImplementedError, "\"logcumsumexp_out_cpu\""),
    (lambda torch: torch.cumprod(torch.ones(2, 3), 2), IndexError, "Dimension out of range"),
    (lambda torch: torch.diff(torch.tensor(1.0)), RuntimeError, "diff expects input to be at least one-dimensional"),
    (lambda torch: torch.mode(torch.tensor([])), IndexError, "mode(): Expected reduction dim 0 to have non-zero size."),
    (lambda torch: torch.quantile(torch.tensor([1, 2]), 0.5), RuntimeError,
     "quantile() input tensor must be either float or double dtype"),
    (lambda torch: torch.quantile(torch.tensor([1.0, 2.0]), 1.5), RuntimeError,
     "quantile() q must be in the range [0, 1] but got 1.5"),
    (lambda torch: torch.quantile(torch.tensor([1.0, 2.0]), torch.tensor([[0.5]])), RuntimeError,
     "quantile() q must be a scalar or 1D tensor"),
    (lambda torch: torch.quantile(torch.tensor([1.0, 2.0]), torch.tensor([0.5], dtype=torch.float64)), RuntimeError,
     "quantile() q tensor must be same dtype as the input tensor"),
    (lambda torch: torch.quantile(torch.tensor([1.0]), 0.5, interpolation="bad"), RuntimeError,
     "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got bad"),
    (lambda torch: torch.quantile(torch.tensor([]), 0.5), RuntimeError, "quantile() input tensor must be non-empty"),
    (lambda torch: torch.nanmean(torch.tensor([1, 2])), RuntimeError,
     "nanmean(): expected input to have floating point or complex dtype but got Long"),
    (lambda torch: torch.bincount(torch.tensor([-1])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    (lambda torch: torch.histc(torch.tensor([1, 2]), bins=4), NotImplementedError, "\"histogram_cpu\""),
    (lambda torch: torch.histc(torch.tensor([1.0, 2.0]), bins=2, min=3, max=1), RuntimeError,
     "torch.histc: max must be larger than min"),
    (lambda torch: torch.topk(torch.tensor([1.0, 3.0]), 3), RuntimeError, "selected index k out of range"),
    (lambda torch: torch.kthvalue(torch.tensor([3.0, 1.0, 2.0]), 4), RuntimeError,
     "kthvalue(): selected number k out of range for dimension 0"),
    (lambda torch: torch.searchsorted(torch.tensor([1, 3]), torch.tensor([3]), right=True, side="left"), RuntimeError,
     "torch.searchsorted(): side and right can't be set to opposites"),
    (lambda torch: torch.searchsorted(torch.tensor([[1, 3]]), torch.tensor([[3], [2]])), RuntimeError,
     "first N-1 dimensions of boundaries tensor and input value tensor must match"),
    (lambda torch: torch.bucketize(torch.tensor([1, 5]), torch.tensor([[1, 3]])), RuntimeError,
     "boundaries tensor must be 1 dimension, but got dim(2)"),
    (lambda torch: torch.zeros(3, 4).masked_select(torch.ones(3, 4)), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda torch: torch.zeros(3, 4).masked_scatter(torch.ones(3, 4, dtype=torch.bool), torch.ones(5)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda torch: torch.zeros(3, 4).scatter(0, torch.tensor([[5, 0]]), 1.0), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda torch: torch.zeros(3, 4).scatter(0, torch.tensor([[1, 0]]), torch.ones(1, 1)), RuntimeError,
     "Expected index [1, 2] to be no larger than self [3, 4] apart from dimension 0"),
    (lambda torch: torch.zeros(3, 4).scatter(0, torch.tensor([[1, 0]]), 2.0, reduce="bad"), RuntimeError,
     "reduce argument must be either add or multiply."),
    (lambda torch: torch.zeros(3, 4).scatter_reduce(0, torch.tensor([[1, 0]]), torch.ones(1, 2), "bad"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got bad"),
    (lambda torch: torch.zeros(3, 4).index_add(0, torch.tensor([5]), torch.ones(1, 4)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda torch: torch.zeros(3, 4).index_add(0, torch.tensor([1]), torch.ones(1, 3)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension."),
    (lambda torch: torch.zeros(3, 4).index_fill(0, torch.tensor([5]), 1.0), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda torch: torch.zeros(3, 4).take(torch.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda torch: torch.repeat_interleave(torch.tensor([1, 2]), torch.tensor([2, -1])), RuntimeError,
     "repeats can not be negative"),
    (lambda torch: torch.rot90(torch.ones(2, 3), 1, [0, 0]), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
    (lambda torch: torch.roll(torch.ones(2, 3), (1, -1), (0,)), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda torch: torch.fliplr(torch.ones(2)), RuntimeError, "Input must be >= 2-d."),
    (lambda torch: torch.movedim(torch.ones(2, 3), (0, 0), (1, 0)), RuntimeError, "movedim: repeated dim in `source`"),
    (lambda torch: torch.ones(2, 12).unflatten(1, (5, -1)), RuntimeError,
     "unflatten: Provided sizes [5, -1] don't multiply up to the size of dim 1 (12) in the input tensor"),
    (lambda torch: torch.meshgrid(torch.ones(2, 2), torch.ones(2), indexing="ij"), RuntimeError,
     "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got:"),
    (lambda torch: torch.tensor_split(torch.tensor(1.0), 2), RuntimeError,
     "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
    (lambda torch: torch.hsplit(torch.ones(2, 5), 2), RuntimeError,
     "torch.hsplit attempted to split along dimension 1, but the size of the dimension 5 is not divisible"),
    (lambda torch: torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2), stride=[1, 2, 3]),
     RuntimeError, "expected stride to be a single integer value or a list of 2 values to match the convolution "
     "dimensions, but got stride=[1, 2, 3]"),
    (lambda torch: torch.nn.functional.conv2d(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2), padding=[1, 1, 1]),
     RuntimeError, "expected padding to be a single integer value or a list of 2 values"),
    (lambda torch: torch.amax(torch.ones(0, 3)), RuntimeError,
     "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with"),
    (lambda torch: torch.amax(torch.ones(0, 3), dim=-2), IndexError,
     "amax(): Expected reduction dim -2 to have non-zero size."),
    (lambda torch: torch.argmax(torch.ones(0, 3)), IndexError,
     "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda torch: torch.argmax(torch.ones(0, 3), dim=0), IndexError,
     "argmax(): Expected reduction dim 0 to have non-zero size."),
    (lambda torch: torch.aminmax(torch.ones(0, 3)), RuntimeError,
     "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."),
    (lambda torch: torch.ones(2, 3).narrow(1, 1, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda torch: torch.ones(2, 3).narrow(1, 1, 7), RuntimeError, "start (1) + length (7) exceeds dimension size (3)."),
    (lambda torch: torch.ones(2, 3).narrow(1, -4, 1), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got -4)"),
    (lambda torch: torch.narrow_copy(torch.ones(2, 3), 1, 4, 1), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got 4)"),
    (lambda torch: torch.ones(2, 3).index_select(0, torch.ones(2)), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    (lambda torch: torch.where(torch.ones(2), torch.ones(2), 0.0), RuntimeError,
     "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
    (lambda torch: torch.ones(2).where(torch.ones(2, dtype=torch.int64), 0.0), RuntimeError,
     "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
    (lambda torch: torch.cross(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64), dim=1), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda torch: torch.linalg.cross(torch.ones(2, 3, dtype=torch.int64), torch.ones(2, 3)), RuntimeError,
     "expected scalar type Long but found Float"),
    (lambda torch: torch.repeat_interleave(torch.ones(2, 3), torch.ones(2, 3, dtype=torch.int64)), RuntimeError,
     "repeats must be 0-dim or 1-dim tensor"),
    (lambda torch: torch.zeros(), TypeError, 'zeros() missing 1 required positional arguments: "size"'),
    (lambda torch: torch.igamma(torch.ones(2, dtype=torch.bool), torch.ones(2, dtype=torch.int64)),
     NotImplementedError, "\"igamma_cpu\" not implemented for 'Long'"),
    (lambda torch: torch.ones(2, 3).masked_fill(torch.ones(2, 3) > 0, torch.ones(2, 3)), RuntimeError,
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 2 dimension(s)."),
    (lambda torch: torch.meshgrid(indexing="ij"), RuntimeError, "meshgrid expects a non-empty TensorList"),
    (lambda torch: torch.bincount(torch.ones(3)), NotImplementedError, "\"bincount_cpu\" not implemented for 'Float'"),
    (lambda torch: torch.binomial(torch.ones(3).long(), torch.ones(3)), ValueError,
     "binomial only supports floating-point dtypes for count, got: Long"),
    (lambda torch: torch.binomial(torch.ones(3), torch.ones(3, dtype=torch.bool)), ValueError,
     "binomial only supports floating-point dtypes for prob, got: Bool"),
    (lambda torch: torch.add(torch.ones(2, 3), torch.ones(4, 5)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"),
    (lambda torch: torch.allclose(torch.ones(2, 3), torch.ones(4, 5)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"),
    (lambda torch: torch.lu_unpack(torch.ones(2, 3), torch.ones(2, 3)), RuntimeError,
     "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype."),
    (lambda torch: torch.nn.functional.cross_entropy(torch.ones(2, 3), torch.ones(3)), ValueError,
     "Expected input batch_size (2) to match target batch_size (3)."),
    (lambda torch: torch.nn.functional.cross_entropy(torch.ones(2, 3, 4), torch.ones(2, 3, 5)), RuntimeError,
     "Expected target size [2, 4], got [2, 3, 5]"),
    (lambda torch: torch.nn.functional.nll_loss(torch.ones(2, 3, 4), torch.ones(2, 5).long()), RuntimeError,
     "Expected target size [2, 4], got [2, 5]"),
    (lambda torch: torch.nn.functional.nll_loss(torch.ones(2, 3), torch.ones(2, 3).long()), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda torch: torch.nn.functional.cross_entropy(torch.ones(3), torch.ones(2).long()), ValueError,
     "For 1D input, 1D target must have size 1, but got target size: 2"),
    (lambda torch: torch.ones(2, 3).permute(), TypeError, 'permute() missing 1 required positional arguments: "dims"'),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_error_matches_torch(index):
    call, kind, message = ERRORS[index]
    with pytest.raises(kind) as ours:
        call(scriptc)
    assert message in str(ours.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(kind) as theirs:
        call(torch)
    assert message in str(theirs.value)


def test_sign_of_a_bool_tensor_is_the_tensor():
    flags = scriptc.tensor([True, False])
    assert scriptc.sign(flags).tolist() == [True, False]
    assert scriptc.sgn(flags).dtype == scriptc.bool
    assert scriptc.where(flags.to(scriptc.uint8), 1.0, 0.0).tolist() == [1.0, 0.0]


def test_igamma_of_an_integer_and_a_float_tensor_computes_in_the_float_dtype_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = (lib.igammac(lib.tensor([1, 2, 3]), lib.tensor([0.5, 1.5, 2.5])) for lib in (scriptc, torch))
    assert ours.dtype == scriptc.float32
    assert ours.tolist() == pytest.approx(theirs.tolist(), rel=1e-5)
