"""torch.autograd.forward_ad: forward-mode automatic differentiation through dual tensors.

Inside `dual_level()`, `make_dual(x, t)` gives a tensor whose tangent is t; every op on it gives its
outputs the Jacobian-vector products J t as tangents, and `unpack_dual` reads them back.

While a level is open, eager dispatch hands each op call to `_propagate` (`dispatch.forward_ad_hook`:
one check otherwise). The tangent comes from the op's own reverse-mode formula: with a stand-in g for
the output gradient, the vector-Jacobian products v(g) = J^T g are recorded with create_graph, and since
<v(g), t> = <g, J t>, J t is the gradient of <v(g), t> with respect to g. So each op that supports
create_graph supports forward AD; the others raise torch's NotImplementedError. Tangents are kept per
level (only one level at a time, as in torch) and dropped when it closes. Complex tangents are not
supported.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Any, NamedTuple

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

_LEVEL: list = [None]  # the open level (always 0: torch does not nest them), or None
_TANGENTS: dict = {}   # id(dual tensor) -> (weak reference to it, its tangent) at the open level


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view of the tensor without its tangent) and the tangent
    (None when the tensor has none at this level)."""

    primal: Any
    tangent: Any


def enter_dual_level() -> int:
    """Open a forward-AD level and return it (0); torch supports one level at a time."""
    from scriptc.tensors import dispatch

    if _LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _LEVEL[0] = 0
    dispatch.forward_ad_hook[0] = _propagate
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level: every dual tensor of it loses its tangent."""
    from scriptc.tensors import dispatch

    if level is not None and level != _LEVEL[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _TANGENTS.clear()
    _LEVEL[0] = None
    dispatch.forward_ad_hook[0] = None


class dual_level:
    """Context manager (and decorator) around a forward-AD level: `with dual_level(): ...`."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapped


def make_dual(tensor, tangent, *, level: int | None = None):
    """A view of `tensor` whose tangent (forward gradient) is `tangent`, at the open level."""
    if _LEVEL[0] is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if level is not None and level != _LEVEL[0]:
        raise RuntimeError("Invalid level given to _make_dual")
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not (t.is_floating_point() or t.is_complex()):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {t.dtype}")
        if t.is_complex():
            raise NotImplementedError("scriptc's forward AD does not support complex tensors")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if _tangent_of(tensor) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {_LEVEL[0]} is not supported.")
    dual = _plain_view(tensor)
    _set_tangent(dual, _as_tangent_of(tensor, tangent))
    return dual


def _as_tangent_of(primal, tangent):
    """The tangent itself where it is laid out as the primal (as torch keeps it), else its values copied
    into the primal's layout; without reverse-mode history either way (scriptc's tangents carry none)."""
    import scriptc

    if tangent.requires_grad:
        tangent = tangent.detach()
    if tangent.stride() == primal.stride():
        return tangent
    with scriptc.no_grad():
        return scriptc.empty_like(primal).copy_(tangent)


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of a tensor: the tangent at the open level, or None."""
    tangent = _tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    if level is not None and level != _LEVEL[0]:
        raise RuntimeError("Invalid level given to _fw_primal")
    return UnpackedDualTensor(_plain_view(tensor), tangent)


def _plain_view(tensor):
    """A view of tensor made without forward AD (so it carries no tangent), keeping its reverse-mode history."""
    with _suspended():
        return tensor.view(tensor.shape)


@contextlib.contextmanager
def _suspended():
    """Ops inside run without propagating tangents."""
    from scriptc.tensors import dispatch

    hook = dispatch.forward_ad_hook[0]
    dispatch.forward_ad_hook[0] = None
    try:
        yield
    finally:
        dispatch.forward_ad_hook[0] = hook


def function_input_tangents(inputs: tuple) -> list | None:
    """For an autograd.Function call: each input's tangent at the open level (None for one without), or None
    when no input has one (the Function then runs as any other)."""
    from scriptc.tensors import Tensor

    if _LEVEL[0] is None:
        return None
    tangents = [_tangent_of(a) if isinstance(a, Tensor) else None for a in inputs]
    return tangents if any(t is not None for t in tangents) else None


def run_function_forward(forward):
    """forward() of an autograd.Function whose inputs carry tangents: its ops propagate none (as in torch,
    the Function's jvp gives its outputs' tangents)."""
    with _suspended():
        return forward()


def set_function_tangents(cls, ctx, inputs: tuple, tangents: list, output) -> None:
    """Give an autograd.Function's outputs the tangents its jvp(ctx, *input tangents) returns (an input
    without a tangent passes zeros, or None with ctx.set_materialize_grads(False))."""
    from scriptc.grad_mode import no_grad
    from scriptc.tensors import Tensor

    given = [t if t is not None else (a.new_zeros(a.shape) if isinstance(a, Tensor) and ctx.materialize_grads
                                      else None) for a, t in zip(inputs, tangents)]
    with _suspended(), no_grad():
        result = cls.jvp(ctx, *given)
    outputs = output if isinstance(output, tuple) else (output,)
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(outputs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(results)} tangents, but forward returned "
                           f"{len(outputs)} outputs")
    for out, tangent in zip(outputs, results):
        if isinstance(out, Tensor) and isinstance(tangent, Tensor):
            _set_tangent(out, tangent)


def _tangent_of(tensor):
    entry = _TANGENTS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]


def _set_tangent(tensor, tangent) -> None:
    key = id(tensor)
    _TANGENTS[key] = (weakref.ref(tensor, lambda _: _TANGENTS.pop(key, None)), tangent)


# --- propagation through ops -------------------------------------------------------------------

def _propagate(op, run, args):
    """dispatch's hook: run(op, args), and give the outputs J t when an input carries a tangent."""
    from scriptc.tensors import dispatch

    duals = _dual_arguments(op, args)
    dispatch.forward_ad_hook[0] = None
    try:
        if not duals:
            return run(op, args)
        # A random op (dropout) runs twice, here and in _jvp, with the same draws: its generators are set
        # back to their state before the first run, and end where one run leaves them.
        pure = op.inplace_of or op
        generators = _generators(pure, args)
        before = _states(generators)
        if op.inplace_of is not None:  # the new value's tangent, from the pure op on the old value
            tangents = _jvp(pure, args, duals)
            _set_states(generators, before)
            result = run(op, args)
            outputs = [result]
        else:
            result = run(op, args)
            after = _states(generators)
            _set_states(generators, before)
            try:
                tangents = _jvp(op, args, duals)
            finally:
                _set_states(generators, after)
            outputs = _flat_outputs(result)
        for out, tangent in zip(outputs, tangents):
            if tangent is not None:
                _set_tangent(out, tangent)
        return result
    finally:
        if _LEVEL[0] is not None:
            dispatch.forward_ad_hook[0] = _propagate


def _generators(op, args) -> list:
    """The generators a random op (dropout) draws from; none for other ops."""
    from scriptc.ops.generator import Generator, default_generator
    from scriptc.ops.schema import RANDOM

    if op.kind != RANDOM:
        return []
    return [a for a in args if isinstance(a, Generator)] or [default_generator]


def _states(generators) -> list:
    return [g.rng.bit_generator.state for g in generators]


def _set_states(generators, states) -> None:
    for g, state in zip(generators, states):
        g.rng.bit_generator.state = state


def _dual_arguments(op, args) -> list:
    """(argument index, list position or None, tangent) of every input with a tangent."""
    from scriptc.tensors import Tensor

    found = []
    for i, a in enumerate(args):
        items = enumerate(a) if type(a) in (list, tuple) else [(None, a)]
        for j, t in items:
            if isinstance(t, Tensor):
                tangent = _tangent_of(t)
                if tangent is not None:
                    found.append((i, j, tangent))
    return found


def _flat_outputs(result) -> list:
    from scriptc.tensors import Tensor

    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [r if isinstance(r, Tensor) else None for r in result]
    return []


def _jvp(op, args, duals) -> list:
    """Per output of op(args): J t (detached), or None for an output without a gradient."""
    from scriptc.autograd.engine import grad
    from scriptc.grad_mode import enable_grad
    from scriptc.tensors import Tensor, dispatch, wrap

    def stand_in(t, differentiate: bool):
        fresh = wrap(t._data)
        return fresh.requires_grad_() if differentiate else fresh

    positions = {(i, j) for i, j, _ in duals}
    inputs = [[stand_in(t, (i, j) in positions) if isinstance(t, Tensor) else t for j, t in enumerate(a)]
              if type(a) in (list, tuple) else stand_in(a, (i, None) in positions) if isinstance(a, Tensor) else a
              for i, a in enumerate(args)]
    leaves = [inputs[i] if j is None else inputs[i][j] for i, j, _ in duals]
    with enable_grad():
        outputs = _flat_outputs(dispatch.call(op, tuple(inputs)))
        differentiable = [o for o in outputs if o is not None and o.requires_grad]
        if not differentiable:
            return [None] * len(outputs)
        cotangents = [wrap(o._data * 0).requires_grad_() for o in differentiable]
        products = grad(differentiable, leaves, cotangents, create_graph=True, allow_unused=True)
        pairing = [(v * t).sum() for v, (_, _, t) in zip(products, duals) if v is not None]
        if not pairing:
            jvps = [wrap(o._data * 0) for o in differentiable]
        else:
            try:
                jvps = grad(sum(pairing[1:], pairing[0]), cotangents, allow_unused=True, materialize_grads=True)
            except RuntimeError as error:
                if not str(error).startswith("derivative for aten::"):
                    raise
                raise NotImplementedError(
                    f"Trying to use forward AD with {op.base_name} that does not support it because it has not been "
                    "implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/"
                    "new?template=feature-request.yml so that we can prioritize its implementation or submit a PR "
                    "adding the implementation to derivatives.yaml") from None
    by_output = {id(o): j.detach() for o, j in zip(differentiable, jvps)}
    return [None if o is None else by_output.get(id(o)) for o in outputs]
