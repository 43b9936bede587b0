"""torch.library operators defined in Python (the custom-ops tutorial's forms) against torch 2.13:
custom_op with register_fake / register_autograd / register_kernel, torch.ops.<ns>.<name>, mutation,
Library.define/impl, infer_schema, opcheck, and the errors torch raises."""

import itertools
from typing import Optional

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")

_names = itertools.count()


def _namespace():
    """A fresh namespace per definition: both libraries keep operators for the life of the process."""
    return f"sc_lib_test{next(_names)}"


def _numpy_sin(lib, ns):
    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return lib.empty_like(x)
    return numpy_sin


def _with_autograd(lib, op):
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()
    op.register_autograd(backward, setup_context=setup_context)
    return op


def _sin_outcomes(lib):
    ns = _namespace()
    op = _with_autograd(lib, _numpy_sin(lib, ns))
    x = lib.tensor([0.1, -0.7, 1.3], requires_grad=True)
    y = op(x)
    (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
    through_ops = getattr(lib.ops, ns).numpy_sin(x.detach())
    default = getattr(lib.ops, ns).numpy_sin.default(x.detach())
    return (y.detach().numpy().tolist(), y.requires_grad, x.grad.numpy().tolist(), through_ops.numpy().tolist(),
            default.numpy().tolist())


def test_custom_op_with_autograd_matches_torch():
    ours, theirs = _sin_outcomes(scriptc), _sin_outcomes(torch)
    assert ours[1] == theirs[1]
    for a, b in zip(ours[:1] + ours[2:], theirs[:1] + theirs[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_backward_through_an_op_without_autograd_raises_as_torch():
    for lib in (scriptc, torch):
        op = _numpy_sin(lib, _namespace())
        y = op(lib.ones(2, requires_grad=True))
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            y.sum().backward()
        assert not op(lib.ones(2)).requires_grad


def _mutation_outcomes(lib):
    ns = _namespace()

    @lib.library.custom_op(f"{ns}::sin_into", mutates_args={"out"})
    def sin_into(x: lib.Tensor, out: lib.Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())

    out = lib.zeros(3)
    version = out._version
    result = sin_into(lib.tensor([0.0, 0.5, 1.0]), out)
    return result, out.numpy().tolist(), out._version > version


def test_mutating_op_writes_its_argument_as_torch():
    ours, theirs = _mutation_outcomes(scriptc), _mutation_outcomes(torch)
    assert ours[0] is None and theirs[0] is None and ours[2] and theirs[2]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def _crop_outcomes(lib):
    ns = _namespace()

    @lib.library.custom_op(f"{ns}::crop", mutates_args=())
    def crop(pic: lib.Tensor, box: list[int], scale: float = 1.0) -> lib.Tensor:
        return pic[..., box[0]:box[1], box[2]:box[3]].clone() * scale

    pic = lib.arange(48.0).reshape(3, 4, 4).requires_grad_()
    out = crop(pic, [1, 3, 0, 2], scale=2.0)
    return out.detach().numpy().tolist(), out.requires_grad, str(crop)[:10]


def test_op_with_list_and_default_arguments_matches_torch():
    assert _crop_outcomes(scriptc)[:2] == _crop_outcomes(torch)[:2]


def _library_outcomes(lib):
    ns = _namespace()
    library = lib.library.Library(ns, "DEF")
    library.define("scaled(Tensor x, float factor=2.0) -> Tensor")
    library.impl("scaled", lambda x, factor=2.0: x * factor + x.sin(), "CompositeImplicitAutograd")
    library.define("opaque_double(Tensor x) -> Tensor")
    library.impl("opaque_double", lambda x: x * 2, "CPU")
    x = lib.tensor([0.25, 1.5], requires_grad=True)
    y = getattr(lib.ops, ns).scaled(x, factor=3.0)
    y.sum().backward()
    opaque = getattr(lib.ops, ns).opaque_double(x)
    return y.detach().numpy().tolist(), x.grad.numpy().tolist(), opaque.detach().numpy().tolist()


def test_library_define_and_impl_match_torch():
    ours, theirs = _library_outcomes(scriptc), _library_outcomes(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_define_impl_and_register_functions_match_torch():
    for lib in (scriptc, torch):
        ns = _namespace()
        lib.library.define(f"{ns}::twice", "(Tensor x) -> Tensor")

        @lib.library.impl(f"{ns}::twice", "cpu")
        def twice(x):
            return x * 2

        lib.library.register_fake(f"{ns}::twice")(lambda x: lib.empty_like(x))
        lib.library.register_autograd(f"{ns}::twice", lambda ctx, g: g * 2)
        x = lib.ones(3, requires_grad=True)
        getattr(lib.ops, ns).twice(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda T: (lambda x: x),
    lambda T: (lambda x, n, flag=True: x),
    lambda T: (lambda xs, out, *, eps=1e-5: None),
    lambda T: (lambda x, maybe=None: (x, x)),
])
def test_infer_schema_matches_torch(make):
    def schema(lib):
        fn = make(lib)
        annotations = {"x": lib.Tensor, "n": int, "flag": bool, "xs": list[lib.Tensor], "out": lib.Tensor,
                       "eps": float, "maybe": Optional[lib.Tensor]}
        fn.__annotations__ = {k: v for k, v in annotations.items() if k in fn.__code__.co_varnames}
        fn.__annotations__["return"] = {1: lib.Tensor, 3: lib.Tensor, 2: None}.get(
            fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount, tuple[lib.Tensor, lib.Tensor])
        if "maybe" in fn.__code__.co_varnames:
            fn.__annotations__["return"] = tuple[lib.Tensor, lib.Tensor]
        return lib.library.infer_schema(fn, mutates_args={"out"} if "out" in fn.__code__.co_varnames else ())
    assert schema(scriptc) == schema(torch)


def test_opcheck_passes_a_correct_op_and_catches_an_undeclared_mutation():
    ops = {}
    for lib in (scriptc, torch):
        op = _with_autograd(lib, _numpy_sin(lib, _namespace()))
        result = lib.library.opcheck(op, (lib.tensor([0.5, 1.0], requires_grad=True),))
        ops[lib.__name__] = sorted(result), set(result.values())
    assert ops["scriptc"] == ops["torch"] == (["test_aot_dispatch_dynamic", "test_autograd_registration",
                                              "test_faketensor", "test_schema"], {"SUCCESS"})

    ns = _namespace()

    @scriptc.library.custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: scriptc.Tensor) -> scriptc.Tensor:
        x.numpy()[0] = 5.0
        return x.clone()
    result = scriptc.library.opcheck(sneaky, (scriptc.ones(2),), raise_exception=False)
    assert isinstance(result["test_schema"], RuntimeError) and "mutated the argument 'x'" in str(result["test_schema"])
    with pytest.raises(Exception, match="test_schema failed"):
        scriptc.library.opcheck(sneaky, (scriptc.ones(2),))


@pytest.mark.parametrize("bad", [
    lambda lib, ns: lib.library.custom_op("no_namespace", mutates_args=())(lambda x: x),
    lambda lib, ns: lib.library.custom_op(f"{ns}::unannotated", mutates_args=())(lambda x: x),
    lambda lib, ns: lib.library.infer_schema(lambda x: x, mutates_args=("y",)),
])
def test_bad_definitions_raise_as_torch(bad):
    with pytest.raises(Exception) as theirs:
        bad(torch, _namespace())
    with pytest.raises(type(theirs.value)):
        bad(scriptc, _namespace())


def test_redefining_an_operator_raises_as_torch():
    for lib in (scriptc, torch):
        ns = _namespace()
        lib.library.define(f"{ns}::once", "(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="multiple times"):
            lib.library.define(f"{ns}::once", "(Tensor x) -> Tensor")


def test_unknown_namespace_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_namespace_here"):
        assert scriptc.ops.no_such_namespace_here is None
