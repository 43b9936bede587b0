"""torch.utils.swap_tensors and torch.__future__'s module-conversion switches against torch 2.13."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _swapped(lib):
    first = lib.tensor([1.0, 2.0], requires_grad=True)
    second = lib.nn.Parameter(lib.tensor([[3.0], [4.0], [5.0]], dtype=lib.float64))
    second.grad = lib.ones(3, 1, dtype=lib.float64)
    second.note = "moved"
    ids = id(first), id(second)
    lib.utils.swap_tensors(first, second)
    return ((id(first), id(second)) == ids, type(first).__name__, type(second).__name__,
            first.detach().numpy().tolist(), second.detach().numpy().tolist(), str(first.dtype)[-7:],
            first.grad.numpy().tolist(), second.grad, first.note, first.requires_grad, second.requires_grad)


def test_swap_tensors_matches_torch():
    assert _swapped(scriptc) == _swapped(torch)


def test_swap_tensors_refuses_weakly_referenced_tensors():
    import weakref
    kept = scriptc.ones(2)
    ref = weakref.ref(kept)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref associated with it"):
        scriptc.utils.swap_tensors(kept, scriptc.zeros(2))
    with pytest.raises(RuntimeError, match="Cannot swap t2"):
        scriptc.utils.swap_tensors(scriptc.zeros(2), kept)
    with pytest.raises(TypeError, match="must be Tensor"):
        scriptc.utils.swap_tensors(scriptc.zeros(2), [1.0])
    assert ref() is kept


@pytest.mark.parametrize("switch", [None, "swap", "overwrite"])
def test_module_conversion_switches_match_torch(switch):
    def convert(lib):
        setter = {"swap": lib.__future__.set_swap_module_params_on_conversion,
                  "overwrite": lib.__future__.set_overwrite_module_params_on_conversion}.get(switch)
        model = lib.nn.Linear(2, 3)
        weight = model.weight
        model.weight.grad = lib.ones(3, 2)
        if setter:
            setter(True)
        try:
            model.double()
        finally:
            if setter:
                setter(False)
        return (model.weight is weight, str(weight.dtype)[-7:], str(model.weight.dtype)[-7:],
                str(model.weight.grad.dtype)[-7:], isinstance(model.weight, lib.nn.Parameter),
                lib.__future__.get_swap_module_params_on_conversion(),
                lib.__future__.get_overwrite_module_params_on_conversion())
    assert convert(scriptc) == convert(torch)


def test_swapped_parameters_train():
    model = scriptc.nn.Linear(2, 1)
    optimizer = scriptc.optim.SGD(model.parameters(), lr=0.5)
    scriptc.__future__.set_swap_module_params_on_conversion(True)
    try:
        model.double()
    finally:
        scriptc.__future__.set_swap_module_params_on_conversion(False)
    before = model.weight.detach().numpy().copy()
    model(scriptc.ones(4, 2, dtype=scriptc.float64)).sum().backward()
    optimizer.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), before - 0.5 * 4)
