"""gradcheck: autograd's gradients against float64 central differences."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from scriptc.autograd.engine import grad
from scriptc.grad_mode import enable_grad, no_grad


def gradcheck(func, inputs: Sequence, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Compare autograd's gradients of `func(*inputs)` with float64 central differences.

    Every element of the Jacobian is compared: by reverse mode (check_backward_ad, on by default) and by
    forward mode (check_forward_ad: one dual-tensor call per input element, which also checks an
    autograd.Function's jvp). fast_mode=True, torch's random projection of the Jacobian, is accepted
    and checks the full Jacobian, which passes where that passes. scriptc's ops are deterministic, so
    nondet_tol has nothing to allow for; its backward reads an undefined (None) output gradient as
    zeros and its vmap runs the function once per sample, so check_undefined_grad and the batched
    checks have nothing to find beyond what this compares; check_grad_dtypes requires each gradient
    in its input's dtype. masked (torch's masked semantics for sparse inputs) changes nothing here:
    the inputs gradcheck differentiates are dense.

    Inputs that require grad must be float64 or complex128 tensors; a complex input's gradient is
    d/d(real part) + i d/d(imaginary part) of the real-valued test function, PyTorch's convention.
    Returns True, or raises (or returns False with raise_exception=False) naming the input and the
    worst element.
    """
    from scriptc.tensors import Tensor, wrap

    # (torch's checks on the flags: without them a gradcheck that compares nothing would pass)
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    inputs = _as_tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for t in diff_inputs:
        if t.dtype.name not in ("float64", "complex128"):
            raise ValueError("gradcheck expects float64 or complex128 inputs that require grad, got " + t.dtype.name)

    def outputs_of():
        with no_grad():
            out = func(*inputs)
        return _tensors(out)

    base = outputs_of()
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(o.shape) + (1j * rng.standard_normal(o.shape) if o._data.dtype.kind == "c" else 0)
               for o in base]
    outs = _tensors(func(*inputs))
    differentiable = [(o, w) for o, w in zip(outs, weights) if o.requires_grad]
    # Outputs that carry no gradient (an index, a rank) are left out of the numerical side too.
    checked = [i for i, o in enumerate(outs) if o.requires_grad or not check_backward_ad]

    def scalarize(outs, weights):
        # Re(sum(conj(w) * out)): its gradient with respect to a complex output is w itself.
        return sum(float((np.conj(weights[i]) * outs[i]._data).real.sum()) for i in checked)
    analytic_grads = [None] * len(diff_inputs)
    if check_backward_ad and differentiable and diff_inputs:
        # (autograd.grad, not backward: an input may be a non-leaf - x.clone() - whose .grad stays None)
        analytic_grads = grad([o for o, _ in differentiable], diff_inputs,
                              [wrap(w.astype(o._data.dtype)) for o, w in differentiable], allow_unused=True)
    for index, (t, found) in enumerate(zip(diff_inputs, analytic_grads)):
        data = t._data
        numeric = np.zeros(t.shape, data.dtype)
        for idx in np.ndindex(*data.shape):
            orig = data[idx]
            for step in ((1.0, 1j) if data.dtype.kind == "c" else (1.0,)):
                data[idx] = orig + eps * step
                plus = scalarize(outputs_of(), weights)
                data[idx] = orig - eps * step
                minus = scalarize(outputs_of(), weights)
                data[idx] = orig
                numeric[idx] += step * (plus - minus) / (2 * eps)
        compared = []
        if check_backward_ad and check_grad_dtypes and found is not None and found._data.dtype != data.dtype:
            if raise_exception:
                raise GradcheckError("Gradient has dtype mismatch")
            return False
        if check_backward_ad:
            compared.append(("Jacobian mismatch", np.zeros(t.shape, data.dtype) if found is None else found._data))
        if check_forward_ad:
            compared.append(("Jacobian computed with forward mode mismatch",
                             _forward_mode_gradient(func, inputs, diff_inputs, index, weights, checked)))
        for what, analytic in compared:
            if not np.allclose(analytic, numeric, atol=atol, rtol=rtol):
                worst = int(np.argmax(np.abs(analytic - numeric)))
                message = (f"{what} for input {index} (shape {list(t.shape)}): at flat index {worst} analytical "
                           f"{analytic.reshape(-1)[worst]:.8g} vs numerical {numeric.reshape(-1)[worst]:.8g}")
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _tensors(out) -> list:
    from scriptc.tensors import Tensor

    return [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]


def _forward_mode_gradient(func, inputs: tuple, diff_inputs: list, index: int, weights: list, checked: list):
    """d Re(sum(conj(w) * out)) / d input[index], one element at a time: func run on dual tensors whose
    tangent is 1 at that element of that input and 0 elsewhere."""
    from scriptc.autograd import forward_ad
    from scriptc.tensors import wrap

    target = diff_inputs[index]
    gradient = np.zeros(target.shape, target._data.dtype)
    for idx in np.ndindex(*target.shape):
        with no_grad(), forward_ad.dual_level():
            duals = {}
            for t in diff_inputs:
                direction = np.zeros(t.shape, t._data.dtype)
                if t is target:
                    direction[idx] = 1
                duals[id(t)] = forward_ad.make_dual(t.detach(), wrap(direction))
            outs = _tensors(func(*[duals.get(id(a), a) for a in inputs]))
            for i in checked:
                tangent = forward_ad.unpack_dual(outs[i]).tangent
                if tangent is not None:
                    gradient[idx] += float((np.conj(weights[i]) * tangent._data).real.sum())
    return gradient


def _as_tuple(values) -> tuple:
    """torch's `inputs`/`grad_outputs`: a tuple of tensors, or one tensor alone."""
    from scriptc.tensors import Tensor

    return (values,) if isinstance(values, Tensor) else tuple(values)


class GradcheckError(RuntimeError):
    """gradcheck found analytical and numerical gradients that differ."""


def gradgradcheck(func, inputs: Sequence, grad_outputs: Sequence | None = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
                  fast_mode: bool = False) -> bool:
    """gradcheck of the gradient itself: the second derivatives of `func(*inputs)` (recorded with
    create_graph=True) against central differences of its first derivatives. `grad_outputs` are the
    vectors the first gradient is taken against (random float64, fixed seed, when omitted)."""
    from scriptc.tensors import Tensor, wrap

    inputs = _as_tuple(inputs)
    with no_grad():
        probe = func(*inputs)
    outputs = [o for o in (probe if isinstance(probe, (tuple, list)) else (probe,)) if isinstance(o, Tensor)]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [wrap(rng.standard_normal(o.shape)).requires_grad_(True) for o in outputs]
    grad_outputs = list(_as_tuple(grad_outputs))

    def first_derivatives(*args):
        values = args[:len(inputs)]
        vectors = args[len(inputs):]
        with enable_grad():
            return _first_derivatives(values, vectors)

    def _first_derivatives(values, vectors):
        out = func(*values)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
        wanted = [t for t in values if isinstance(t, Tensor) and t.requires_grad]
        pairs = [(o, v) for o, v in zip(outs, vectors) if o.requires_grad]
        found = grad([o for o, _ in pairs], wanted, [v for _, v in pairs], create_graph=True, allow_unused=True)
        return tuple(g if g is not None else w.new_zeros(w.shape) for g, w in zip(found, wanted))
    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
