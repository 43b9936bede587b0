"""A grad_fn's saved tensors (_saved_self, _saved_result, _raw_saved_*.register_hooks), calling a grad_fn,
and AccumulateGrad in next_functions, against torch 2.13 (the autograd_saved_tensors_hooks tutorial)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

rng = np.random.default_rng(3)


def both(*shape):
    data = rng.standard_normal(shape).astype(np.float32)
    return scriptc.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


def test_saved_input_is_the_input_and_saved_result_equals_the_output():
    for lib, x in zip((scriptc, torch), both(5)):
        y = x.pow(2)
        assert y.grad_fn._saved_self is x and y.grad_fn._saved_self.equal(x)
        z = x.exp()
        assert z.grad_fn._saved_result.equal(z) and z.grad_fn._saved_result is not z
        product = x * lib.ones(5)
        assert product.grad_fn._saved_other.equal(lib.ones(5))


def test_reading_a_saved_tensor_after_backward_names_the_freed_graph():
    for x in both(3):
        y = x.sin()
        y.sum().backward()
        with pytest.raises(RuntimeError, match="directly access saved tensors after they have already been freed"):
            _ = y.grad_fn._saved_self


def test_an_attribute_the_node_did_not_save_is_an_attribute_error():
    for x in both(3):
        with pytest.raises(AttributeError, match="_saved_nothing"):
            _ = x.exp().grad_fn._saved_nothing


def test_raw_saved_tensor_hooks_pack_now_and_unpack_in_backward():
    results = []
    for x in both(4):
        calls = []
        y = x.pow(2)
        y.grad_fn._raw_saved_self.register_hooks(lambda t: calls.append("pack") or t * 1,
                                                 lambda t: calls.append("unpack") or t)
        assert calls == ["pack"]
        with pytest.raises(RuntimeError, match="whose hooks have already been set"):
            y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
        y.sum().backward()
        assert calls == ["pack", "unpack"]
        results.append(x.grad.detach().numpy())
        with pytest.raises(RuntimeError, match="after it has been freed"):
            y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_a_saved_tensor_read_under_saved_tensors_hooks_comes_back_through_unpack():
    for lib, x in zip((scriptc, torch), both(3)):
        unpacked = []
        with lib.autograd.graph.saved_tensors_hooks(lambda t: ("packed", t), lambda p: unpacked.append(1) or p[1]):
            y = x.pow(2)
        assert y.grad_fn._saved_self.equal(x) and unpacked == [1]


def test_calling_a_node_gives_its_input_gradients():
    ours, theirs = both(2, 3)
    for x in (ours, theirs):
        assert x.sin().grad_fn(x.new_ones((2, 3))).allclose(x.cos())
    ours_grads = (ours * ours.detach()).grad_fn(scriptc.ones(2, 3))
    their_grads = (theirs * theirs.detach()).grad_fn(torch.ones(2, 3))
    np.testing.assert_allclose(ours_grads[0].numpy(), their_grads[0].numpy())
    assert ours_grads[1] is None and their_grads[1] is None


def test_calling_a_node_with_the_wrong_number_of_gradients_is_torchs_type_error():
    for x in both(3):
        with pytest.raises(TypeError, match="expected 1 arguments, got 2 instead"):
            (x * 2).grad_fn(x.new_ones(3), x.new_ones(3))


def test_a_leaf_in_next_functions_is_its_accumulate_grad_node():
    for x in both(3):
        accumulate, index = (x * 2).grad_fn.next_functions[0]
        assert type(accumulate).__name__ == "AccumulateGrad" and index == 0
        assert accumulate.variable is x and accumulate.next_functions == ()
        assert accumulate.name() == "torch::autograd::AccumulateGrad"


@pytest.mark.parametrize("expression", [
    "x.sum()", "x.sum(1)", "x.sum((0, 1))", "x.mean()", "x.mean(0)", "x.prod()", "x.prod(1)", "x.max()",
    "x.max(1)[0]", "x.min()", "x.min(0).values", "x ** 2", "x ** x", "2 ** x", "x - 1", "1 - x", "x.clamp(0, 1)",
    "x.clamp(max=1)", "x.clamp(min=x * 0)", "x.double()", "x.to(T.float64)", "x.chunk(3, 1)[1]", "x.narrow(1, 0, 2)",
    "x.reshape(3, 2)", "x.flatten()", "x.t().reshape(6)", "T.nn.functional.layer_norm(x, (3,))", "x.norm()",
    "x.norm(dim=1)", "T.nn.functional.linear(x, w)", "T.nn.functional.linear(x, w, w[:, 0])", "x @ w.t()",
    "T.nn.functional.cross_entropy(x, T.tensor([0, 1]))",
])
def test_node_names_are_torchs(expression):
    # what a printed tensor shows as grad_fn=<...> in a tutorial's output
    names = []
    for T, x in zip((scriptc, torch), both(2, 3)):
        w = T.ones(4, 3, requires_grad=True)
        names.append(eval(expression, {"T": T, "x": x, "w": w}).grad_fn.name())
    assert names[0] == names[1]
