"""Differential checks of nn layers against torch: the same layer built by both libraries, torch's
state_dict loaded into ours unchanged, then repr, forward, backward (input and parameter gradients)
and the buffers a forward updates compared, in train and eval mode, in float64."""

from __future__ import annotations

from typing import Callable

import numpy as np

import scriptc


def _arrays(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _assert_close(actual, expected, rtol, atol, what):
    assert tuple(actual.shape) == tuple(expected.shape), f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = actual.detach().numpy(), expected.detach().numpy()
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=what)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=what)


def build_pair(torch, build: Callable, dtype: str = "float64"):
    """(ours, theirs): build(T) with T = scriptc and torch, torch's weights loaded into ours."""
    theirs = build(torch).to(getattr(torch, dtype))
    ours = build(scriptc).to(getattr(scriptc, dtype))
    assert repr(ours) == repr(theirs)
    missing = ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    assert not missing.missing_keys and not missing.unexpected_keys, missing
    return ours, theirs


def compare_layer(torch, build: Callable, *inputs: np.ndarray, modes=("train", "eval"), rtol: float = 1e-7,
                  atol: float = 1e-9, grad: bool = True, call: Callable | None = None, dtype: str = "float64"):
    """Check build(T) agrees between scriptc and torch on `inputs` (arrays; float ones require grad).

    `call(layer, *tensors)` runs the layer (default: layer(*tensors)); outputs may be tuples.
    """
    ours, theirs = build_pair(torch, build, dtype)
    run = call or (lambda layer, *xs: layer(*xs))
    rng = np.random.default_rng(0)
    for mode in modes:
        ours.train(mode == "train")
        theirs.train(mode == "train")
        floating = [a.dtype.kind == "f" and grad for a in inputs]
        t_in = [torch.tensor(a.astype(dtype) if f else a, requires_grad=f) for a, f in zip(inputs, floating)]
        s_in = [scriptc.tensor(a.astype(dtype) if f else a, requires_grad=f) for a, f in zip(inputs, floating)]
        t_out, s_out = _arrays(run(theirs, *t_in)), _arrays(run(ours, *s_in))
        assert len(t_out) == len(s_out)
        for i, (s, t) in enumerate(zip(s_out, t_out)):
            _assert_close(s, t, rtol, atol, f"{mode} output {i}")
        for (name, s), (_, t) in zip(ours.named_buffers(), theirs.named_buffers()):
            _assert_close(s, t, rtol, atol, f"{mode} buffer {name}")
        if not grad:
            continue
        pairs = [(s, t) for s, t in zip(s_out, t_out) if t.requires_grad]
        if not pairs:
            continue
        weights = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
        sum((t * torch.tensor(w, dtype=t.dtype)).sum() for (_, t), w in zip(pairs, weights)).backward()
        scriptc.autograd.backward([s for s, _ in pairs], [scriptc.tensor(w.astype(dtype)) for w in weights])
        for i, (s, t) in enumerate(zip(s_in, t_in)):
            if t.requires_grad:
                assert (s.grad is None) == (t.grad is None), f"{mode} input {i} grad presence"
                if t.grad is not None:
                    _assert_close(s.grad, t.grad, rtol, atol, f"{mode} input {i} grad")
        for (name, s), (_, t) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert (s.grad is None) == (t.grad is None), f"{mode} {name} grad presence"
            if t.grad is not None:
                _assert_close(s.grad, t.grad, rtol, atol, f"{mode} {name} grad")
            s.grad = t.grad = None
    return ours, theirs


def same_error(torch, fn: Callable):
    """fn(T) raises the same exception type with the same message under scriptc and torch."""
    errors = []
    for T in (scriptc, torch):
        try:
            fn(T)
        except Exception as exc:  # noqa: BLE001 - the point is to compare whatever each raises
            errors.append(exc)
        else:
            errors.append(None)
    ours, theirs = errors
    assert theirs is not None, "torch raised nothing"
    assert ours is not None, f"scriptc raised nothing; torch raised {type(theirs).__name__}: {theirs}"
    assert type(ours).__name__ == type(theirs).__name__ or isinstance(ours, type(theirs)), \
        f"{type(ours).__name__}: {ours}  vs torch {type(theirs).__name__}: {theirs}"
    expected = str(theirs).strip()
    assert expected in str(ours) or str(ours) in expected, f"{ours!s}\n  vs torch\n{theirs!s}"
