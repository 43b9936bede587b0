"""Differential checks of modules and functions against torch 2.13: the same weights, the same inputs, then
outputs, input gradients and parameter gradients compared (train and eval mode)."""

from __future__ import annotations

import numpy as np

import scriptc


def copy_weights(theirs, ours) -> None:
    """Load torch module `theirs`'s state_dict into `ours` (through numpy, as a checkpoint would)."""
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def convert(value, T, grads: list):
    """numpy float arrays become tensors that require grad (collected in `grads`), other arrays plain tensors,
    callables are called with the backend module, tuples and lists are converted element by element."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            t = T.tensor(value, requires_grad=True)
            grads.append(t)
            return t
        return T.tensor(value)
    if isinstance(value, (tuple, list)):
        return type(value)(convert(v, T, grads) for v in value)
    if callable(value) and not isinstance(value, type):
        return value(T)
    return value


def flatten(out) -> list:
    """The tensors in a (nested) result, PackedSequence data included."""
    if out is None:
        return []
    if hasattr(out, "detach"):
        return [out]
    if hasattr(out, "_fields") and "batch_sizes" in out._fields:
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in flatten(item)]
    return []


def assert_close(ours, theirs, rtol=1e-5, atol=1e-5, what=""):
    mine = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    ref = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert mine.shape == ref.shape, f"{what}: shape {mine.shape} != {ref.shape}"
    np.testing.assert_allclose(mine, ref, rtol=rtol, atol=atol, err_msg=what)


def backward_both(ours_out: list, theirs_out: list, seed: int = 0) -> None:
    """Backpropagate the same random weighting of every floating output through both results."""
    import torch

    rng = np.random.default_rng(seed)
    pairs = [(o, t) for o, t in zip(ours_out, theirs_out) if t.requires_grad]
    weights = [rng.standard_normal(tuple(t.shape)).astype(np.float32) for _, t in pairs]
    if not pairs:
        return
    sum((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, weights)).backward()
    sum((o * scriptc.tensor(w)).sum() for (o, _), w in zip(pairs, weights)).backward()


def compare_call(fn, args, kwargs=None, rtol=1e-5, atol=1e-5, grad_rtol=1e-4, grad_atol=1e-5):
    """fn(T, *args, **kwargs) with both backends: outputs and gradients of the float array arguments."""
    import torch

    kwargs = kwargs or {}
    their_grads, our_grads = [], []
    theirs = fn(torch, *convert(list(args), torch, their_grads), **{k: convert(v, torch, []) for k, v in kwargs.items()})
    ours = fn(scriptc, *convert(list(args), scriptc, our_grads), **{k: convert(v, scriptc, []) for k, v in kwargs.items()})
    t_flat, o_flat = flatten(theirs), flatten(ours)
    assert len(t_flat) == len(o_flat)
    for i, (o, t) in enumerate(zip(o_flat, t_flat)):
        assert_close(o, t, rtol, atol, f"output {i}")
    backward_both(o_flat, t_flat)
    for i, (o, t) in enumerate(zip(our_grads, their_grads)):
        if t.grad is None:
            assert o.grad is None or not np.any(o.grad.numpy()), f"argument {i} should get no gradient"
        else:
            assert o.grad is not None, f"argument {i} got no gradient"
            assert_close(o.grad, t.grad, grad_rtol, grad_atol, f"gradient of argument {i}")
    return ours, theirs


def compare_module(build, args, kwargs=None, modes=("train", "eval"), rtol=1e-5, atol=1e-5, grad_rtol=1e-4,
                   grad_atol=1e-5, seed=0):
    """build(T) makes the module with each backend; torch's weights are copied into ours, then for each mode
    the outputs, the input gradients and the parameter gradients must agree. The reprs and state_dict keys
    must be equal too. Returns (ours, theirs)."""
    import torch

    torch.manual_seed(seed)
    theirs = build(torch)
    ours = build(scriptc)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_weights(theirs, ours)
    for mode in modes:
        theirs.train(mode == "train")
        ours.train(mode == "train")
        compare_call(lambda T, *a, **k: (theirs if T is torch else ours)(*a, **k), args, kwargs, rtol, atol,
                     grad_rtol, grad_atol)
        ours_params = dict(ours.named_parameters())
        for name, p in theirs.named_parameters():
            if p.grad is None:
                assert ours_params[name].grad is None or not np.any(ours_params[name].grad.numpy()), name
            else:
                assert_close(ours_params[name].grad, p.grad, grad_rtol, grad_atol, f"gradient of {name}")
        theirs.zero_grad()
        ours.zero_grad()
    return ours, theirs


def constant(array):
    """An argument that is the same tensor for both backends and gets no gradient (targets, masks, weights)."""
    return lambda T: T.tensor(array)


def assert_same_error(call, error, message: str) -> None:
    """call(T) raises `error`, its message containing `message`, with torch and with scriptc alike."""
    import pytest
    import torch

    for T in (torch, scriptc):
        with pytest.raises(error) as info:
            call(T)
        assert message in str(info.value), f"{T.__name__}: {info.value}"
