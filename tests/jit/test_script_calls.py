"""Calls into scripted functions (Python values converted as torch binds them) and call forms inside them."""
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np
import pytest

import scriptc as torch
import scriptc.nn.functional as F


def _every_other(x: List[int]) -> List[int]:
    return x[slice(0, 6, 2)]


def test_a_range_is_accepted_for_a_list_parameter():
    scripted = torch.jit.script(_every_other)
    assert scripted(range(10)) == [0, 2, 4]
    assert scripted((5, 6, 7)) == [5, 7]
    with pytest.raises(RuntimeError, match="Expected a value of type 'List\\[int\\]' for argument 'x'"):
        scripted("abc")


def _index_by_method(x: torch.Tensor, items: List[int]):
    indices = torch.tensor([0, 2], dtype=torch.long)
    return x.__getitem__(indices), items.__getitem__(-1)


def test_getitem_called_as_a_method_indexes():
    x = torch.rand(3, 4)
    got, last = torch.jit.script(_index_by_method)(x, [4, 5, 6])
    want, _ = _index_by_method(x, [4, 5, 6])
    assert last == 6 and got.tolist() == want.tolist()


def _getitem_without_index(x: torch.Tensor):
    return x.__getitem__()


def test_getitem_without_an_index_is_refused():
    with pytest.raises(RuntimeError, match="expected exactly 1 argument"):
        torch.jit.script(_getitem_without_index)


def _slice_with_keyword(x: List[int]):
    return x[slice(1, stop=2)]


def test_slice_refuses_keyword_arguments():
    with pytest.raises(RuntimeError, match="Slice does not accept any keyword arguments"):
        torch.jit.script(_slice_with_keyword)


def _either(x: Union[Dict[str, int], List[int]]) -> str:
    return "either"


def _two(x: int, y: int = 2) -> int:
    return x + y


@pytest.mark.parametrize("value, found", [
    ({"a": "b"}, r"Dict\[str, str\]"), (["a"], r"List\[str\]"), (1, "int"), ((1, "a"), r"Tuple\[int, str\]")])
def test_a_value_no_member_of_a_union_fits_is_named_with_its_type(value, found):
    scripted = torch.jit.script(_either)
    assert scripted([1, 2]) == scripted({"a": 1}) == "either"
    with pytest.raises(RuntimeError, match=rf"(?m)Expected a member of Union\[List\[int\], Dict\[str, int\]\] but "
                                           rf"instead found type {found}$"):
        scripted(value)


@pytest.mark.parametrize("args, kwargs, message", [
    ((1, 2, 3), {}, r"_two\(\) expected at most 2 argument\(s\) but received 3 argument\(s\)"),
    ((), {}, r"_two\(\) is missing value for argument 'x'"),
    ((1,), {"z": 3}, "Unknown keyword argument 'z' for operator '_two'"),
    ((1,), {"x": 3}, "Argument 'x' specified both as positional and keyword argument"),
])
def test_calls_that_do_not_fit_the_signature_are_runtime_errors(args, kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        torch.jit.script(_two)(*args, **kwargs)


class _Scales(torch.nn.Module):
    def forward(self, x, scale: float = 2.0):
        return x * scale


def test_a_module_counts_self_among_its_arguments():
    with pytest.raises(RuntimeError, match=r"forward\(\) expected at most 3 argument\(s\) but received 4"):
        torch.jit.script(_Scales())(torch.ones(1), 1.0, 2.0)


class _KeywordOnly(torch.nn.Module):
    def forward(self, *, tokens: int, name: str):
        return tokens, name


def _offset(x: int, *, by: int) -> int:
    return x + by


def _offset_by_default(x: int, *, by: int = 1) -> int:
    return x + by


def test_keyword_only_parameters_take_keywords_and_refuse_positionals_as_torch_words_it():
    module = torch.jit.script(_KeywordOnly())
    assert module(tokens=3, name="a") == (3, "a")
    assert torch.jit.script(_offset)(1, by=2) == 3
    with pytest.raises(RuntimeError, match=r"forward\(\) takes 1 positional argument\(s\) but 3 was/were given"):
        module(3, "a")
    with pytest.raises(RuntimeError, match=r"_offset\(\) takes 1 positional argument\(s\) but 2 was/were given"):
        torch.jit.script(_offset)(1, 2)
    with pytest.raises(RuntimeError, match="forward\\(\\) is missing value for argument 'tokens'"):
        module()
    with pytest.raises(torch.jit.frontend.NotSupportedError, match="keyword-only arguments with defaults"):
        torch.jit.script(_offset_by_default)  # torch refuses such a signature


class _Describer:
    @torch.jit.ignore
    def __call__(self, *args) -> str:
        return f"{type(args[0]).__name__} of {args[0].numel()}"


_DESCRIBE = _Describer()


def _described(x):
    return _DESCRIBE(x)


def test_an_object_with_an_ignored_call_is_called_in_python():
    assert torch.jit.script(_described)(torch.ones(3)) == "Tensor of 3"


def _flag(x: bool) -> bool:
    return x


def _has_key(keys: Dict[torch.Tensor, int], t: torch.Tensor) -> bool:
    return t in keys


def test_numbers_are_bool_arguments_by_their_truth():
    scripted = torch.jit.script(_flag)
    assert scripted(2) is True and scripted(0.0) is False and scripted(True) is True


def test_tensor_keys_of_a_dict_argument_are_keys_by_identity():
    key = torch.tensor(3)
    scripted = torch.jit.script(_has_key)
    assert scripted({key: 1}, key) is True
    assert scripted({key: 1}, torch.tensor(3)) is False


class _Pair(NamedTuple):
    first: torch.Tensor
    second: int


def _swap_pair(pair: _Pair) -> Tuple[_Pair, List[_Pair]]:
    swapped = _Pair(pair.first * 2, pair.second + 1)
    return swapped, [pair, swapped]


class _MakesPairs(torch.nn.Module):
    def forward(self, x) -> _Pair:
        return _Pair(x + 1, 3)


def test_named_tuples_come_back_as_their_class():
    scripted = torch.jit.script(_swap_pair)
    swapped, both = scripted(_Pair(torch.ones(2), 4))
    assert isinstance(swapped, _Pair) and swapped.second == 5 and swapped.first.tolist() == [2.0, 2.0]
    assert all(isinstance(p, _Pair) for p in both)
    made = torch.jit.script(_MakesPairs())(torch.zeros(1))
    assert isinstance(made, _Pair) and made.second == 3


def _count(x: Optional[List[float]]) -> int:
    return 0 if x is None else len(x)


def _broadcast_count(x):
    # type: (Optional[BroadcastingList2[float]]) -> int
    return 0 if x is None else len(x)


def _passes_a_tuple(x: Tuple[float, float]) -> int:
    return _count(x) + _broadcast_count(x)


def test_a_tuple_fills_an_optional_list_parameter():
    assert torch.jit.script(_passes_a_tuple)((2.0, 3.0)) == 4


def _first_of(pair: _Pair) -> torch.Tensor:
    return pair.first


def test_a_named_tuple_whose_fields_do_not_fit_is_named_whole():
    with pytest.raises(RuntimeError, match=r"\(aka NamedTuple\(first, second\)\) for argument 'pair' but instead found "
                                           r"type '_Pair'"):
        torch.jit.script(_first_of)(_Pair("a", 1))


def _appends_three(values: List[int]) -> List[int]:
    values.append(3)
    return values


def _sets_key(table: Dict[str, float]) -> int:
    table["a"] = 1.0
    return len(table)


def _empty_temporaries():
    return _appends_three([])


def _empty_dict():
    return _sets_key({})


def _empty_variable():
    values = []
    return _appends_three(values)


def test_an_empty_literal_passed_to_a_scripted_function_takes_the_parameter_type():
    assert torch.jit.script(_empty_temporaries)() == [3]
    with pytest.raises(RuntimeError, match="Expected a value of type 'List\\[int\\]' for argument 'values'"):
        torch.jit.script(_empty_variable)
    with pytest.raises(RuntimeError, match="Expected a value of type 'Dict\\[str, float\\]' for argument 'table'"):
        torch.jit.script(_empty_dict)  # torch infers only an empty list from the parameter


def test_scripted_instance_norm_takes_fs_defaults_for_weight_and_bias():
    def normalize(x, mean, var):
        return F.instance_norm(x, mean, var)

    x = torch.tensor(np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32))
    expected = normalize(x, torch.zeros(3), torch.ones(3))
    got = torch.jit.script(normalize)(x, torch.zeros(3), torch.ones(3))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_scripted_embedding_bag_maps_fs_input_to_the_ops_indices():
    def bags(indices, weight, offsets):
        return F.embedding_bag(indices, weight, offsets, mode="sum")

    weight = torch.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    indices, offsets = torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1])
    np.testing.assert_array_equal(torch.jit.script(bags)(indices, weight, offsets).numpy(),
                                  bags(indices, weight, offsets).numpy())


def test_a_scripted_embedding_bag_module_takes_rows_of_2d_input_as_bags():
    torch.manual_seed(0)
    module = torch.nn.EmbeddingBag(5, 3, mode="max")
    rows = torch.tensor([[0, 4, 2], [1, 1, 3]])
    np.testing.assert_allclose(torch.jit.script(module)(rows).detach().numpy(), module(rows).detach().numpy())


def test_scripted_gumbel_softmax_gives_soft_and_one_hot_samples():
    def sample(logits):
        return F.gumbel_softmax(logits, 2.0), F.gumbel_softmax(logits, 0.5, True)

    soft, hard = torch.jit.script(sample)(torch.rand(3, 4))
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), np.ones(3), rtol=1e-5)
    assert sorted(set(hard.detach().numpy().ravel().tolist())) == [0.0, 1.0]
    np.testing.assert_array_equal(hard.sum(-1).detach().numpy(), np.ones(3))


def test_scripted_upsample_is_interpolate():
    def resize(x):
        return F.upsample(x, 4), F.upsample(x, None, 2.0, "bilinear", False)

    x = torch.rand(1, 2, 2, 2)
    for got, expected in zip(torch.jit.script(resize)(x), (F.interpolate(x, 4),
                                                           F.interpolate(x, None, 2.0, "bilinear", False))):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_scripted_unfold_and_fold_are_im2col_and_col2im_not_tensor_unfold():
    def blocks(x):
        columns = F.unfold(x, [2, 3])
        return columns, F.fold(columns, [4, 5], [2, 3]), F.unfold(x, 2, 1, 1, 2)

    x = torch.rand(1, 2, 4, 5)
    for got, expected in zip(torch.jit.script(blocks)(x), blocks(x)):
        assert list(got.shape) == list(expected.shape)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


@torch.jit.ignore
def _ignored_add_ten(value, scale: float = 1.0):
    return value * scale + 10


def test_arguments_of_an_ignored_function_are_checked_against_its_parameters():
    @torch.jit.script
    def scaled(x: torch.Tensor) -> torch.Tensor:
        return _ignored_add_ten(x, scale=2)  # an int where a float is declared converts, as in torch

    assert scaled(torch.ones(2)).tolist() == [12.0, 12.0]

    def passes_a_str():
        return _ignored_add_ten("2")

    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'value' but instead found "
                                           "type 'str'"):
        torch.jit.script(passes_a_str)


def _as_int(a: int) -> int:
    return a


def _as_float(a: float) -> float:
    return a


def test_an_item_passed_for_an_int_or_float_parameter_converts_as_torchscript():
    def numbers(x):
        return _as_int(x.item()), _as_float(x.item())

    scripted = torch.jit.script(numbers)
    assert scripted(torch.tensor(1.5)) == (1, 1.5)
    got = scripted(torch.tensor(3))
    assert got == (3, 3.0) and type(got[0]) is int and type(got[1]) is float


def _window_sum(kernel: F.BroadcastingList2[int], scale: F.BroadcastingList2[float]) -> float:
    return float(kernel[0] * kernel[1]) * scale[0] * scale[1]


def test_a_number_passed_for_a_broadcasting_list_parameter_stands_for_n_of_it():
    def windows() -> float:
        return _window_sum(3, 0.5) + _window_sum([1, 2], [1.0, 2.0])

    assert torch.jit.script(windows)() == 9 * 0.25 + 2 * 2.0


@pytest.mark.parametrize("norm_type", [2.0, 1.5, float("inf")])
def test_lp_pool_modules_script_with_an_int_kernel_size(norm_type):
    x = torch.rand(1, 2, 7, 7)
    for module in (torch.nn.LPPool2d(norm_type, 3, 2), torch.nn.LPPool1d(norm_type, 2)):
        inputs = x if isinstance(module, torch.nn.LPPool2d) else x[0]
        np.testing.assert_allclose(torch.jit.script(module)(inputs).numpy(), module(inputs).numpy(), rtol=1e-5)


def _implicit_softmax(x: torch.Tensor):
    return F.softmax(x), F.log_softmax(x), F.softmin(x)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_scripted_softmax_without_dim_takes_torchs_implicit_dim_with_its_warning(shape):
    torch_ref = pytest.importorskip("torch")
    x = torch.randn(*shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        got = torch.jit.script(_implicit_softmax)(x)
    dim = 0 if len(shape) in (1, 3) else 1
    reference = torch_ref.tensor(x.numpy())
    want = (reference.softmax(dim), reference.log_softmax(dim), (-reference).softmax(dim))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_a_scripted_softmax_module_without_dim_runs():
    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        got = torch.jit.script(torch.nn.Softmax())(x)
    np.testing.assert_allclose(got.numpy(), F.softmax(x, 1).numpy(), rtol=1e-6)


def test_a_scripted_log_softmax_module_without_dim_warns_in_its_name():
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        torch.jit.script(torch.nn.LogSoftmax())(torch.randn(2, 3))


def _softmax_over(x: torch.Tensor, dim: Optional[int]):
    return F.softmax(x, dim, _stacklevel=5)


def test_a_scripted_softmax_dim_that_may_be_none_is_chosen_at_run_time():
    x = torch.randn(2, 3)
    scripted = torch.jit.script(_softmax_over)
    np.testing.assert_allclose(scripted(x, 0).numpy(), F.softmax(x, 0).numpy(), rtol=1e-6)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        np.testing.assert_allclose(scripted(x, None).numpy(), F.softmax(x, 1).numpy(), rtol=1e-6)


def _negated(x):
    return torch.neg(x) * 2


_TRACED_NEGATED = torch.jit.trace(_negated, torch.rand(3, 4))


def _calls_a_traced_function(x):
    return _TRACED_NEGATED(x) + 1


class _PythonModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(5, 7))

    def forward(self, x):
        return torch.mm(x, self.weight)


_PYTHON_MODULE = _PythonModule()
_SCRIPTED_MODULE = torch.jit.script(_PythonModule())


def _calls_a_python_module(x):
    return _PYTHON_MODULE(x) + 1


def _calls_a_script_module(x):
    return _SCRIPTED_MODULE(x) + 1


def test_a_traced_function_called_from_scripted_code_is_inlined():
    scripted = torch.jit.script(_calls_a_traced_function)
    for x in (torch.rand(3, 4), torch.rand(2, dtype=torch.float64)):
        torch.testing.assert_close(scripted(x), -x * 2 + 1)
    assert "neg" in str(scripted.graph)


def test_a_module_of_the_enclosing_scope_is_called_in_python():
    x = torch.rand(2, 5)
    torch.testing.assert_close(torch.jit.script(_calls_a_python_module)(x), torch.mm(x, _PYTHON_MODULE.weight) + 1)


def test_a_script_module_of_the_enclosing_scope_is_refused_in_torchs_words():
    with pytest.raises(RuntimeError, match="Cannot call a ScriptModule that is not a submodule of the caller"):
        torch.jit.script(_calls_a_script_module)


def _scaled_by(x, tensor):
    return x.addcmul(tensor, tensor, value=tensor)


def test_a_tensor_that_requires_grad_is_no_implicit_number():
    """As TorchScript's implicit tensor-to-number conversion: a 0-d tensor converts, one that
    requires grad is refused (its gradient would be cut)."""
    scripted = torch.jit.script(_scaled_by)
    x = torch.zeros(3)
    assert scripted(x, torch.tensor(2.0)).tolist() == [8.0] * 3
    with pytest.raises(RuntimeError, match="Cannot input a tensor that requires grad as a scalar argument"):
        scripted(x, torch.tensor(2.0, requires_grad=True))


def kl_div(input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.kl_div(input, target, reduction="sum")


def _calls_a_helper_named_as_the_function_it_calls(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return kl_div(x, y)


def test_a_helper_named_as_the_function_it_calls_keeps_its_own_graph():
    # (both functions' qualified names are kl_div: the helper's graph must not be replaced by F's)
    x, y = torch.randn(3), torch.rand(3)
    scripted = torch.jit.script(_calls_a_helper_named_as_the_function_it_calls)
    np.testing.assert_allclose(scripted(x, y).numpy(), kl_div(x, y).numpy(), rtol=1e-6)
