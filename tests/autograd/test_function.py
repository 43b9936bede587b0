"""torch.autograd.Function: custom forward/backward against torch 2.13, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _both(build):
    """Run build(lib) with torch and with scriptc; return both results as numpy lists."""
    out = []
    for lib in (torch, scriptc):
        result = build(lib)
        out.append([None if r is None else np.asarray(r.detach().numpy() if hasattr(r, "detach") else r)
                    for r in result])
    return out


def _close(results):
    ours_torch, ours = results
    for a, b in zip(ours_torch, ours):
        if a is None:
            assert b is None
        else:
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _scaled_exp(lib):
    class ScaledExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale, offset):
            y = x.exp() * scale + offset
            ctx.save_for_backward(x)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False, False)
            return g * x.exp() * ctx.scale, None, None
    return ScaledExp


def test_save_for_backward_non_tensor_args_and_name():
    def build(lib):
        x = lib.tensor(_data((2, 3)), requires_grad=True)
        offset = lib.tensor(_data((3,), 1))
        y = _scaled_exp(lib).apply(x, 2.5, offset)
        assert type(y.grad_fn).__name__ == "ScaledExpBackward" or y.grad_fn.name() == "ScaledExpBackward"
        (y * y).sum().backward()
        return [y, x.grad]
    _close(_both(build))


def _split_two(lib):
    class SplitTwo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 2, x.sin(), idx, "label"

        @staticmethod
        def backward(ctx, ga, gb, gidx, glabel):
            assert glabel is None
            return ga * 2 + gb * 3
    return SplitTwo


def test_several_outputs_non_differentiable_and_non_tensor_outputs():
    def build(lib):
        x = lib.tensor(_data((4,)), requires_grad=True)
        a, b, idx, label = _split_two(lib).apply(x)
        assert label == "label" and not idx.requires_grad and a.requires_grad
        a.sum().backward()  # b gets no gradient: materialized as zeros
        return [a, b, x.grad]
    _close(_both(build))


def test_setup_context_style_and_materialize_grads_off():
    def build(lib):
        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x * y, x + y

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)
                ctx.set_materialize_grads(False)

            @staticmethod
            def backward(ctx, g_prod, g_sum):
                x, y = ctx.saved_tensors
                assert g_sum is None
                return g_prod * y, g_prod * x
        x = lib.tensor(_data((3,)), requires_grad=True)
        y = lib.tensor(_data((3,), 2), requires_grad=True)
        prod, _ = Mul.apply(x, y)
        prod.sum().backward()
        return [prod, x.grad, y.grad]
    _close(_both(build))


def _add_one_in_place(lib):
    class AddOneInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5
    return AddOneInPlace


def test_mark_dirty_and_input_returned_as_is():
    def build(lib):
        AddOneInPlace = _add_one_in_place(lib)

        class Identity(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 7
        leaf = lib.tensor(_data((3,)), requires_grad=True)
        y = leaf * 1
        z = AddOneInPlace.apply(y)
        assert z is y
        w = Identity.apply(leaf)
        assert w is not leaf
        (z.sum() + w.sum()).backward()
        return [z, leaf.grad]
    _close(_both(build))


def test_apply_under_no_grad_records_nothing():
    for lib in (torch, scriptc):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            y = _scaled_exp(lib).apply(x, 1.0, 0.0)
        assert not y.requires_grad and y.grad_fn is None


def test_backward_twice_needs_retain_graph_and_saved_tensors_are_freed():
    x = scriptc.ones(2, requires_grad=True)
    y = _scaled_exp(scriptc).apply(x, 1.0, 0.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_errors_worded_as_torch():
    class TooMany(scriptc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    class WrongShape(scriptc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return scriptc.ones(3)

    class NoBackward(scriptc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = scriptc.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function TooManyBackward returned an incorrect number of gradients "
                                           r"\(expected 1, got 2\)"):
        TooMany.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"Function WrongShapeBackward returned an invalid gradient at index 0 - "
                                           r"got \[3\] but expected shape compatible with \[2, 2\]"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        NoBackward.apply(x).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 0 is of type int"):
        scriptc.autograd.function.FunctionCtx().save_for_backward(3)
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method"):
        with pytest.warns(DeprecationWarning):
            TooMany()(x)

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        _add_one_in_place(scriptc).apply(scriptc.ones(2, requires_grad=True))


def test_saved_tensor_modified_in_place_is_detected():
    x = scriptc.ones(3, requires_grad=True)
    y = x * 2
    out = _scaled_exp(scriptc).apply(y, 1.0, 0.0)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_backward_is_differentiable_under_create_graph_and_once_differentiable_refuses():
    def build(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x * x
        x = lib.tensor(_data((3,)), requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return [g, gg]
    _close(_both(build))

    for lib in (torch, scriptc):
        class Once(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * g * x
        x = lib.ones(2, requires_grad=True)
        v = lib.ones(2, requires_grad=True)
        (g,) = lib.autograd.grad(Once.apply(x), x, v, create_graph=True)
        with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                               "@once_differentiable"):
            g.sum().backward()


def test_function_inside_a_traced_model_traces_its_forward():
    class Square(scriptc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x + 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    class Model(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = scriptc.nn.Linear(3, 2)

        def forward(self, x):
            return Square.apply(self.fc(x))

    model = Model()
    x = scriptc.tensor(_data((4, 3)).astype(np.float32))
    traced = scriptc.jit.trace(model, x)
    fresh = scriptc.tensor(_data((4, 3), 7).astype(np.float32))
    np.testing.assert_allclose(traced(fresh).detach().numpy(), model(fresh).detach().numpy(), rtol=1e-6)


def test_legacy_variable_wraps_without_history():
    for lib in (torch, scriptc):
        Variable = lib.autograd.Variable
        y = lib.ones(2, requires_grad=True) * 2
        v = Variable(y)
        assert not v.requires_grad and v is not y and isinstance(y, Variable)
        assert Variable(y, requires_grad=True).grad_fn is None
        assert tuple(Variable().shape) == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
            Variable(3)


def _scale_functions(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k=1.0):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class ScaleSetup(lib.autograd.Function):
        @staticmethod
        def forward(x, k=1.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None
    return Scale, ScaleSetup


def test_apply_takes_keyword_arguments_as_torch():
    results = []
    for lib in (torch, scriptc):
        Scale, ScaleSetup = _scale_functions(lib)
        found = []
        for fn, call in [(Scale, lambda f, x: f.apply(x, k=3.0)), (Scale, lambda f, x: f.apply(x=x, k=2.0)),
                         (ScaleSetup, lambda f, x: f.apply(x, k=4.0)), (ScaleSetup, lambda f, x: f.apply(x)),
                         (ScaleSetup, lambda f, x: f.apply(x=x))]:
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = call(fn, x)
            y.sum().backward()
            found.append((y.detach().numpy().tolist(), x.grad.numpy().tolist()))
        results.append(found)
    assert results[1] == results[0]


def test_non_tensor_arguments_are_not_edges_of_the_node():
    found = []
    for lib in (torch, scriptc):
        Scale, _ = _scale_functions(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Scale.apply(x * 1, 2.0)
        seen = []
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
        y.sum().backward()
        found.append((len(y.grad_fn.next_functions), seen, x.grad.numpy().tolist()))
    assert found[1] == found[0] == (1, [1], [2.0, 2.0])


def _numpy_cube(T):
    """A Function with its own setup_context whose forward leaves the library through numpy, as
    PyTorch's "Extending torch.func with autograd.Function" tutorial writes them."""
    class NumpyCube(T.autograd.Function):
        seen_requires_grad = []

        @staticmethod
        def forward(x):
            NumpyCube.seen_requires_grad.append(x.requires_grad)
            if x.requires_grad:
                return x ** 3
            return T.tensor(x.numpy() ** 3)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return grad_output * 3 * x ** 2
    return NumpyCube


@pytest.mark.parametrize("transform", [
    lambda T, f, x: T.func.grad(lambda v: f(v).sum())(x),
    lambda T, f, x: T.func.vjp(f, x)[1](T.ones_like(x))[0],
    lambda T, f, x: T.func.jacrev(f)(x),
])
def test_func_transforms_give_a_setup_context_function_unwrapped_inputs(transform):
    x = np.array([0.5, -1.0, 2.0])
    results = []
    for T in (scriptc, torch):
        cube = _numpy_cube(T)
        results.append(transform(T, cube.apply, T.tensor(x)).detach().numpy())
        assert cube.seen_requires_grad == [False]
    np.testing.assert_allclose(results[0], results[1])


def test_plain_autograd_gives_a_setup_context_function_its_inputs_as_they_are():
    for T in (scriptc, torch):
        cube = _numpy_cube(T)
        x = T.tensor([0.5, -1.0], requires_grad=True)
        cube.apply(x).sum().backward()
        assert cube.seen_requires_grad == [True]
        np.testing.assert_allclose(x.grad.numpy(), [0.75, 3.0])
