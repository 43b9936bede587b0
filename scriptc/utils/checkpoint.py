"""Activation checkpointing (torch.utils.checkpoint): keep a function's inputs, not its activations,
and run it again during backward.

The checkpointed outputs get one autograd Node of their own. Its gradient formula re-runs the
function with grad enabled (the random-number state set back to what the forward saw, so dropout
draws the same masks) and backpropagates through that fresh graph. With use_reentrant=True the
forward runs without grad and the re-run accumulates into the parameters' `.grad` directly, as
torch's CheckpointFunction does; with use_reentrant=False the forward records once to find the
tensors that need gradients (inputs and the parameters the function uses), drops that graph, and
the Node hands their gradients back to the engine, so `autograd.grad` works through it too.
"""

from __future__ import annotations

import contextlib
import warnings
from itertools import chain
from typing import Any, Callable, Iterable

import numpy as np

from scriptc import autograd
from scriptc.random import fork_rng, get_rng_state, set_rng_state
from scriptc.tensors import Tensor, wrap

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "detach_variable", "check_backward_validity"]


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the forward (torch.utils.checkpoint.CheckpointError)."""


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of `inputs` detached, keeping their requires_grad; other values unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(_detached(x) for x in inputs)


def _detached(x):
    if not isinstance(x, Tensor):
        return x
    out = x.detach()
    out.requires_grad = x.requires_grad
    return out


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)


def _noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def _rng_as_in_forward(state, enabled: bool):
    """Run the block with the default generator in the forward's state, then put back the state it had."""
    with fork_rng(enabled=enabled):
        if enabled:
            set_rng_state(state)
        yield


def _flat_tensors(value) -> list:
    """The tensors of an output, in order, through tuples, lists and dict values."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _flat_tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _flat_tensors(item)]
    return []


def _replace_tensors(value, replacements: dict):
    if isinstance(value, Tensor):
        return replacements.get(id(value), value)
    if isinstance(value, (tuple, list)):
        items = [_replace_tensors(item, replacements) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return type(value)((k, _replace_tensors(v, replacements)) for k, v in value.items())
    return value


class _Recompute:
    """The op-like record the autograd engine calls for the checkpoint's Node: `name` and `grad`.

    `inputs` are the Node's inputs (the tensors that receive gradients) and `slots[k]` the argument
    positions input k was passed at (none for a parameter the function reads); `positions` picks,
    among the tensors of the function's result, the ones that are the Node's outputs.
    """

    name = "checkpoint"
    save = ()  # the formula reads no recorded argument: it recomputes them

    def __init__(self, run, args, kwargs, inputs: list, slots: list, positions: list, rng_state, preserve: bool,
                 reentrant: bool, recompute_context, forward_meta: list | None):
        self.run, self.args, self.kwargs = run, args, kwargs
        self.inputs, self.slots, self.positions = inputs, slots, positions
        self.rng_state, self.preserve, self.reentrant = rng_state, preserve, reentrant
        self.recompute_context = recompute_context
        self.forward_meta = forward_meta

    def grad(self, ctx, grads_out):
        if self.reentrant and not autograd._is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        grads_out = grads_out if isinstance(grads_out, tuple) else (grads_out,)
        args = detach_variable(tuple(self.args))
        with _rng_as_in_forward(self.rng_state, self.preserve), autograd.enable_grad(), self.recompute_context:
            flat = _flat_tensors(self.run(*args, **self.kwargs))
        if self.forward_meta is not None:
            _check_recomputed(self.forward_meta, flat)
        pairs = [(flat[i], g) for i, g in zip(self.positions, grads_out) if flat[i].requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        outputs, grads = [o for o, _ in pairs], [wrap(g) for _, g in pairs]
        targets = [[args[i] for i in slot] if slot else [t] for t, slot in zip(self.inputs, self.slots)]
        if self.reentrant:
            autograd.backward(outputs, grads)
            found = [t.grad for t in chain.from_iterable(targets)]
        else:
            found = autograd.grad(outputs, list(chain.from_iterable(targets)), grads, allow_unused=True)
        result, start = [], 0
        for group in targets:
            parts = [g._data for g in found[start:start + len(group)] if g is not None]
            result.append(sum(parts[1:], parts[0]) if parts else None)
            start += len(group)
        return result


def _meta(t: Tensor) -> dict:
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


def _check_recomputed(forward_meta: list, outputs: list) -> None:
    recomputed = [_meta(t) for t in outputs]
    if recomputed != forward_meta:
        details = "".join(f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                          for i, (a, b) in enumerate(zip(forward_meta, recomputed)) if a != b)
        raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                              f"metadata than during the forward pass.\n{details}")


def _leaves_needing_grad(outputs: list, args: tuple) -> list:
    """The tensors the recorded graph of `outputs` reaches that want gradients: the arguments it
    stops at, and the leaves (parameters) that require grad, each once, in the order found.
    The graph is walked along its Edges: an argument is known by the (node, index) that made it."""
    def key(edge):
        return ("leaf", id(edge.leaf)) if edge.leaf is not None else (id(edge.node), edge.index)

    stops = {key(autograd.edge_of(a)): a for a in args if isinstance(a, Tensor) and a.requires_grad}
    found, seen, expanded = [], set(), set()
    stack = [autograd.edge_of(t) for t in outputs if t.requires_grad]
    while stack:
        edge = stack.pop()
        if edge is None or key(edge) in seen:
            continue
        seen.add(key(edge))
        if key(edge) in stops or edge.leaf is not None:
            found.append(stops.get(key(edge), edge.leaf))
        elif id(edge.node) not in expanded:
            expanded.add(id(edge.node))
            stack.extend(autograd._flat_inputs(edge.node.inputs))
    return found


def _attach(result, recompute: _Recompute):
    """Make the result's tensors at `recompute.positions` the outputs of one checkpoint Node; returns
    the result with those tensors replaced."""
    flat = _flat_tensors(result)
    outputs = [flat[i] for i in recompute.positions]
    fresh = [t.detach() for t in outputs]
    node = autograd.record(recompute, (), recompute.inputs, tuple(t._data for t in fresh), None, np)
    for i, t in enumerate(fresh):
        t.requires_grad, t.grad_fn, t._out_index = True, node, i
    return _replace_tensors(result, {id(old): new for old, new in zip(outputs, fresh)})


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable = _noop_context_fn, determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, preserve_rng_state: bool = True, **kwargs):
    """Run `function(*args, **kwargs)` without keeping its activations; backward recomputes them.

    Gradients equal those of the plain call. `preserve_rng_state` (default True) makes the
    recomputation draw the same random numbers (dropout masks). use_reentrant should be given:
    False (recommended) also supports `autograd.grad`, keyword arguments, inputs that do not require
    grad, `context_fn` (two context managers: forward, recomputation) and the determinism check
    (`determinism_check="default"` compares the recomputed outputs' shapes and dtypes).
    `early_stop` is accepted; the recomputation always runs the whole function.
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if debug:
        raise ValueError("checkpoint(debug=True) is not supported by scriptc")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got " + str(determinism_check))
    if use_reentrant and context_fn is not _noop_context_fn:
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    rng_state = get_rng_state() if preserve_rng_state else None
    forward_context, recompute_context = context_fn()
    if use_reentrant:
        check_backward_validity(args)
        with autograd.no_grad(), forward_context:
            result = function(*args)
        slots = [[i] for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        inputs = [args[slot[0]] for slot in slots]
        positions = [i for i, t in enumerate(_flat_tensors(result)) if t.is_floating_point()]
        forward_meta = None
    else:
        with forward_context:
            result = function(*args, **kwargs)
        flat = _flat_tensors(result)
        inputs = _leaves_needing_grad(flat, args)
        slots = [[i for i, a in enumerate(args) if a is t] for t in inputs]
        positions = [i for i, t in enumerate(flat) if t.requires_grad]
        forward_meta = [_meta(t) for t in flat] if determinism_check == "default" else None
    if not inputs or not positions or not autograd.is_grad_enabled():
        return result
    recompute = _Recompute(function, args, kwargs, inputs, slots, positions, rng_state, preserve_rng_state,
                           use_reentrant, recompute_context, forward_meta)
    return _attach(result, recompute)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run a Sequential (or list of modules/functions) in `segments` chunks, checkpointing all but the last."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from scriptc.nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_segment(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_segment(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_segment(end + 1, len(functions) - 1)(input)
