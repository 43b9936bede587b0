"""torch.autograd.Function: user-defined ops with their own backward.

`MyFn.apply(*args)` runs `MyFn.forward` with grad off (ops inside it are traced as usual), then,
when grad is on and a tensor argument requires grad, makes the tensor outputs the outputs of one
Node named `MyFnBackward`, whose gradient is `MyFn.backward(ctx, *grad_outputs)`. Both the
`forward(ctx, *args)` style and the `forward(*args)` + `setup_context(ctx, inputs, output)` style work.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from typing import Any

import numpy as np

from scriptc.autograd import engine, forward_ad
from scriptc.autograd.array_flow import _gradient_dtype
from scriptc.autograd.graph import pack_saved, unpack_saved
from scriptc.grad_mode import is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction"]


class FunctionCtx:
    """The `ctx` forward and backward share: save_for_backward / saved_tensors, mark_dirty,
    mark_non_differentiable, set_materialize_grads, needs_input_grad, and any attribute you set."""

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for backward, where `ctx.saved_tensors` returns them; in-place changes
        to them before backward are detected."""
        from scriptc.tensors import Tensor

        for index, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {index} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare the inputs forward modified in place (they must be returned as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that carry no gradient (indices, masks): they do not require grad, and
        backward receives zeros for them."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """False: backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        saved = getattr(self, "_saved", None)
        if saved is None:
            return tuple(getattr(self, "to_save", ()))
        if saved is engine.FREED:
            raise RuntimeError(engine._FREED_MESSAGE)
        return tuple(unpack_saved(item) for item in saved)

    @property
    def saved_variables(self) -> tuple:
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors


BackwardCFunction = FunctionCtx


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        if bases and "backward" in attrs and "vjp" in attrs:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed.")


class Function(metaclass=_FunctionMeta):
    """Base class of custom autograd ops: subclass with static `forward` and `backward`, call
    `apply`. `backward` returns one gradient per forward argument (None for non-tensors)."""

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
                           "autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward; when grad is on and a tensor argument requires grad, record one Node whose
        gradient is this class's backward."""
        from scriptc.tensors import Tensor

        separate_setup = cls.setup_context is not Function.setup_context
        if separate_setup:
            # as torch: setup_context sees forward's arguments bound, defaults included
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        inputs = args + tuple(kwargs.values())
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in inputs)
        ctx.materialize_grads = True
        tangents = forward_ad.function_input_tangents(inputs)

        def run_forward():
            with no_grad():
                if separate_setup:
                    f_args, f_kwargs = _unwrapped(args), dict(zip(kwargs, _unwrapped(tuple(kwargs.values()))))
                    output = cls.forward(*f_args, **f_kwargs)
                    cls.setup_context(ctx, f_args, output)
                    return output
                return cls.forward(ctx, *args, **kwargs)
        output = run_forward() if tangents is None else forward_ad.run_function_forward(run_forward)
        if is_grad_enabled() and any(ctx.needs_input_grad):
            output = _connect(cls, ctx, inputs, output)
        if tangents is not None:
            forward_ad.set_function_tangents(cls, ctx, inputs, tangents, output)
        return output


# How many torch.func transforms (grad, vjp, jacrev, ...) are differentiating the running code.
_func_transform_depth = [0]


@contextlib.contextmanager
def func_transform():
    """Marks code a torch.func transform differentiates: a Function with its own setup_context then
    sees its tensor arguments as torch.func passes them, unwrapped (not requiring grad), so its
    forward may leave torch (`x.numpy()`), as PyTorch's torch.func tutorials do."""
    _func_transform_depth[0] += 1
    try:
        yield
    finally:
        _func_transform_depth[0] -= 1


def _unwrapped(args: tuple) -> tuple:
    from scriptc.tensors import Tensor

    if not _func_transform_depth[0]:
        return args
    return tuple(a.detach() if isinstance(a, Tensor) and a.requires_grad else a for a in args)


def _connect(cls, ctx, args: tuple, output):
    """Make output's tensors the outputs of one Node for cls's backward; returns the output."""
    from scriptc.tensors import Tensor

    several = isinstance(output, tuple)
    outputs = list(output) if several else [output]
    dirty = {id(t) for t in getattr(ctx, "dirty_tensors", ())}
    non_differentiable = {id(t) for t in getattr(ctx, "non_differentiable", ())}
    inputs = {id(a) for a in args if isinstance(a, Tensor)}
    returned = {id(t) for t in outputs if isinstance(t, Tensor)}
    if dirty - returned:
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                           "The inputs that are modified inplace must all be outputs of the Function.")
    for index, t in enumerate(outputs):
        if isinstance(t, Tensor) and id(t) in inputs and id(t) not in dirty:
            with no_grad():
                outputs[index] = t.view_as(t)  # an input returned as is becomes a new output that aliases it
    saved = tuple(getattr(ctx, "to_save", ()))
    backward_op = _FunctionBackward(cls, ctx, args, outputs)
    # as torch's PyNode, only tensor arguments are edges (next_functions, Node hooks' grad_inputs)
    node = engine.record(backward_op, (), [a for a in args if isinstance(a, Tensor)],
                         tuple(_placeholder(t) for t in outputs), None, np)
    for t in saved:
        if t is not None:
            node.versions.append(("a tensor saved by save_for_backward", t._vc, t._vc[0], t))
    for index, t in enumerate(outputs):
        if not isinstance(t, Tensor) or id(t) in non_differentiable:
            continue
        if id(t) in dirty and t.requires_grad and t.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if t._data.dtype.kind in "fcV":
            t.requires_grad, t.grad_fn, t._out_index = True, node, index
    for t in outputs:
        if isinstance(t, Tensor) and id(t) in non_differentiable:
            t.requires_grad = False
    ctx._saved = tuple(pack_saved(t) for t in saved)
    backward_op.node = node
    return tuple(outputs) if several else outputs[0]


def _placeholder(value):
    from scriptc.tensors import Tensor

    return value._data if isinstance(value, Tensor) else np.zeros(())


class _FunctionBackward:
    """The op-like record of one Function.apply call; the engine calls node_gradient."""

    save = ()
    complex_aware = True

    def __init__(self, cls, ctx, args, outputs):
        from scriptc.tensors import Tensor

        self.cls, self.ctx = cls, ctx
        self.name = cls.__name__
        self.node_name = cls.__name__ + "Backward"
        self.input_shapes = [tuple(a.shape) if isinstance(a, Tensor) else None for a in args]
        self.output_meta = [(t._data.shape, t._data.dtype) if isinstance(t, Tensor) else None for t in outputs]
        self.node = None

    def node_gradient(self, node, grads_out, create_graph: bool) -> tuple:
        from scriptc.tensors import Tensor, wrap

        grads = []
        for g, meta in zip(grads_out, self.output_meta):
            if g is None and meta is not None and self.ctx.materialize_grads:
                g = np.zeros(meta[0], dtype=_gradient_dtype(meta[1]))
            grads.append(wrap(g) if g is not None and not isinstance(g, Tensor) else g)
        backward = self.cls.backward if self.cls.backward is not Function.backward else self.cls.vjp
        with set_grad_enabled(create_graph):
            result = backward(self.ctx, *grads)
        result = list(result) if isinstance(result, (tuple, list)) else [result]
        expected = len(self.input_shapes)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(f"function {self.node_name} returned an incorrect number of gradients (expected "
                               f"{expected}, got {len(result)})")
        out = []
        for index, (g, shape) in enumerate(zip(result, self.input_shapes)):
            if g is not None and shape is None:
                raise RuntimeError(f"function {self.node_name} returned a gradient different than None at position "
                                   f"{index + 1}, but the corresponding forward input was not a Variable")
            if g is not None and not _expandable(tuple(g.shape), shape):
                raise RuntimeError(f"Function {self.node_name} returned an invalid gradient at index {index} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(shape)}")
            if shape is not None:
                out.append(g if g is None or create_graph else g._data)
        return tuple(out)

    def release_saved(self) -> None:
        """Backward ran without retain_graph: saved_tensors is gone, as torch frees it."""
        self.ctx._saved = engine.FREED


def _expandable(shape: tuple, target: tuple) -> bool:
    """Whether a gradient of `shape` sums down to `target` (torch's is_expandable_to, reversed)."""
    if len(target) > len(shape):
        return False
    return all(t == s or t == 1 for t, s in zip(target[::-1], shape[::-1]))


def once_differentiable(fn):
    """Decorate a Function's backward that is not itself differentiable: it runs with grad off,
    and differentiating its result again raises torch's error."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from scriptc.autograd.graph_formulas import _NotTwiceDifferentiable
        from scriptc.tensors import Tensor, wrap

        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        sources = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not sources:
            return outputs
        several = isinstance(outputs, tuple)
        flat = [wrap(t._data) if isinstance(t, Tensor) else t for t in (outputs if several else (outputs,))]
        tensors = [t for t in flat if isinstance(t, Tensor)]
        stub = engine.record(_NotTwiceDifferentiable(
            "once_differentiable", "trying to differentiate twice a function that was marked with "
            "@once_differentiable"), (), [sources], tuple(t._data for t in tensors), None, np)
        for index, t in enumerate(tensors):
            t.requires_grad, t.grad_fn, t._out_index = True, stub, index
        return tuple(flat) if several else flat[0]
    return wrapper
