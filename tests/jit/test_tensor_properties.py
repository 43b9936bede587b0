"""Every public property of a tensor reads the same in scripted code as in eager code, as torch's
TorchScript guarantees (dtype and layout aside: script has no such values to compare)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import scriptc as torch

SKIPPED = {"grad_fn", "output_nr", "names", "was_wrapped_number", "grad_dtype", "dtype", "layout", "imag",
           "real"}


def _properties(tensor) -> list:
    names = []
    for name in dir(tensor):
        if name.startswith("_") or name in SKIPPED:
            continue
        try:
            value = getattr(tensor, name)
        except RuntimeError:
            continue
        if not inspect.isroutine(value):
            names.append(name)
    return names


@pytest.mark.parametrize("name", _properties(torch.arange(4.0).view(2, 2)))
def test_a_tensor_property_reads_the_same_in_script(name):
    tensor = torch.arange(4.0).view(2, 2)
    unit = torch.jit.CompilationUnit(f"def read(x):\n    return x.{name}\n")
    got, expected = unit.read(tensor), getattr(tensor, name)
    if isinstance(expected, torch.Tensor):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    elif isinstance(expected, tuple):  # (Tensor.shape: script's is a List[int])
        assert list(got) == list(expected)
    else:
        assert got == expected and type(got) is type(expected)


def test_detach_and_data_cut_a_scripted_value_from_autograd():
    def use(x):
        y = x * 2
        return y.detach() * x + x.data, x.detach().requires_grad, x.data.requires_grad

    x = torch.ones(2, requires_grad=True)
    out, detached_requires_grad, data_requires_grad = torch.jit.script(use)(x)
    assert not detached_requires_grad and not data_requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])  # through `* x` only, not through y.detach()


def test_type_with_a_dtype_converts_in_script():
    def convert(x):
        return x.type(torch.int32), x.type(torch.float64).dtype == torch.float64

    converted, is_double = torch.jit.script(convert)(torch.tensor([1.5, -2.5]))
    assert converted.dtype == torch.int32 and converted.tolist() == [1, -2] and is_double


def test_view_reshape_and_expand_as_take_the_others_size():
    def shaped(x, y):
        return x.view_as(y), x.reshape_as(y.t()), x[:1].expand_as(torch.zeros(4, 3))

    x, y = torch.arange(6.0).view(2, 3), torch.zeros(3, 2)
    for got, expected in zip(torch.jit.script(shaped)(x, y), shaped(x, y)):
        assert list(got.shape) == list(expected.shape)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())



def _view_as_a_number(x):
    return x.view_as(1)


def test_view_as_something_other_than_a_tensor_is_refused_when_scripted():
    from scriptc.errors import ScriptError

    with pytest.raises(ScriptError, match="view_as\\(\\) expects a Tensor, but got int"):
        torch.jit.script(_view_as_a_number)

def test_retains_grad_reads_retain_grad_in_eager_and_script():
    def retains(t):
        return t.retains_grad

    x = torch.ones(2, requires_grad=True)
    kept, other = x * 2, x * 3
    kept.retain_grad()
    scripted = torch.jit.script(retains)
    assert [retains(t) for t in (x, kept, other)] == [False, True, False]
    assert [scripted(t) for t in (x, kept, other)] == [False, True, False]


def _strides(x: torch.Tensor):
    return x.stride(), x.t().stride(), x[:, ::2].stride(), x.t().stride(0)


def test_stride_without_a_dim_lists_every_dims_stride_as_in_eager():
    x = torch.rand(4, 6)  # (a list in script, a tuple in eager, as in torch)
    assert torch.jit.script(_strides)(x) == ([6, 1], [1, 6], [6, 2], 1)
    assert _strides(x) == ((6, 1), (1, 6), (6, 2), 1)


def _identities(x: torch.Tensor, y: torch.Tensor):
    return x.detach() is x, x.data is x, x is y, x.view(-1) is x, x.contiguous() is x


@pytest.mark.parametrize("same", [True, False])
def test_is_between_tensors_is_identity_and_detach_makes_a_new_tensor_as_in_torch(same):
    x = torch.rand(2, 3)
    y = x if same else x.clone()
    assert torch.jit.script(_identities)(x, y) == (False, False, same, False, True)


def _type_without_arguments(x: torch.Tensor):
    y = x.type()
    return y is x, y


def test_type_without_arguments_is_the_tensor_itself_in_script_as_in_torch():
    x = torch.arange(3, dtype=torch.int32)
    same, y = torch.jit.script(_type_without_arguments)(x)
    assert same and y.dtype == torch.int32 and y.tolist() == [0, 1, 2]
