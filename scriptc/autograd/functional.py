"""torch.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp of a Python function.

Each takes `func` and `inputs` (a Tensor or a tuple of Tensors) and differentiates a fresh call of
func at detached copies of the inputs. Results are detached unless create_graph=True, which keeps
them differentiable (with respect to inputs that require grad). strict=True raises where an
output does not depend on an input, as torch does; otherwise that part of the result is zeros.
jvp and hvp use the double-backward trick, so func's ops need create_graph support.
"""

from __future__ import annotations

from typing import Callable

from scriptc.autograd.engine import grad as _grad
from scriptc.autograd.formulas import table_op
from scriptc.grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    from scriptc.tensors import Tensor

    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for index, item in enumerate(items):
        if not isinstance(item, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                                f"but the value at index {index} has type {type(item)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the given {arg_name} has type {type(item)}.")
    return is_tuple, items


def _prepared(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs to differentiate at: with create_graph an alias keeping the input's history."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _finished(values, create_graph: bool):
    if isinstance(values, tuple):
        return tuple(_finished(v, create_graph) for v in values)
    return values if values is None or create_graph else values.detach()


def _require_differentiable_outputs(outputs) -> None:
    for index, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"Output {index} of the user-provided function does not require gradients. The "
                               "outputs must be computed in a differentiable manner from the input when running "
                               "in strict mode.")


def _require_differentiable_jacobian(jacobian: tuple) -> None:
    """strict mode's check that every first derivative still depends on the inputs (torch's wording)."""
    for index, g in enumerate(jacobian):
        if not g.requires_grad:
            raise RuntimeError("While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {index} is independent of the input. This is not allowed in "
                               "strict mode. You should ensure that your function is twice differentiable and that "
                               "the jacobian depends on the inputs (this would be violated by a linear function for "
                               "example).")


def _grads(outputs, inputs, grad_outputs, create_graph: bool, strict: bool, stage: str,
           subject: str | None = None) -> tuple:
    """d(outputs . grad_outputs)/d(inputs), zeros (or strict's error, about `subject`: "The <stage>"
    unless given) where an input is unused."""
    from scriptc.tensors import Tensor

    if strict and stage == "output":
        _require_differentiable_outputs(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if isinstance(o, Tensor) and o.requires_grad]
    if not pairs:
        found = (None,) * len(inputs)
    else:
        found = _grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs], retain_graph=True,
                      create_graph=create_graph, allow_unused=True)
    result = []
    for index, (x, g) in enumerate(zip(inputs, found)):
        if g is None:
            if strict:
                raise RuntimeError(f"{subject or 'The ' + stage} of the user-provided function is independent of "
                                   f"input {index}. This is not allowed in strict mode.")
            g = x.new_zeros(x.shape)
        result.append(g)
    return tuple(result)


def _checked_outputs(outputs, fn_name: str) -> tuple[bool, tuple]:
    return _as_tuple(outputs, "outputs of the user-provided function", fn_name)


def _vectors(v, like: tuple, like_is_tuple: bool, fn_name: str, single: str) -> tuple:
    """v as a tuple matching `like` in number and shapes; ones when v is None and `like` is one element."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {single} a single Tensor with a single element.")
        return (like[0].new_ones(like[0].shape),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(like):
        if not like_is_tuple:
            raise RuntimeError("The given v should contain a single Tensor.")
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}.")
    for index, (item, target) in enumerate(zip(vs, like)):
        if item.shape != target.shape:
            entry = f"Entry {index} in " if like_is_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {target.shape} but got {item.shape}.")
    return vs


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), the vector-Jacobian product v^T J); v may be omitted for a one-element output."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepared(inputs, create_graph)
        out_tuple, outputs = _checked_outputs(func(*inputs), "vjp")
        vs = _vectors(v, outputs, out_tuple, "vjp", "the user-provided function returns")
        result = _grads(outputs, inputs, vs, create_graph, strict, "output")
    outputs = _finished(outputs, create_graph)
    return (outputs if out_tuple else outputs[0]), (_finished(result, create_graph) if is_tuple else
                                                      _finished(result[0], create_graph))


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), the Jacobian-vector product J v), by differentiating a vjp with respect to its vector."""
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepared(inputs, create_graph)
        vs = _vectors(v, inputs, is_tuple, "jvp", "the input to the user-provided function is")
        out_tuple, outputs = _checked_outputs(func(*inputs), "jvp")
        dummies = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outputs)
        transposed = _grads(outputs, inputs, dummies, True, strict, "output")
        result = _grads(transposed, dummies, vs, create_graph, strict, "gradient")
    return (_finished(outputs if out_tuple else outputs[0], create_graph),
            _finished(result if out_tuple else result[0], create_graph))


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j a tensor of shape out_i.shape + in_j.shape
    (nested tuples follow whether inputs and outputs are tuples). `vectorize` and `strategy` pick how
    torch batches the work; the values are the same here."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and `strategy='
                                      '"forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        _as_tuple(inputs, "inputs", "jacobian")
        if not vectorize:
            # torch's message, its missing space included
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepared(inputs, create_graph)
        out_tuple, outputs = _checked_outputs(func(*inputs), "jacobian")
        if strict:
            _require_differentiable_outputs(outputs)
        if strict and vectorize:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        blocks = []
        for index, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(flat.numel()):
                selector = flat.new_zeros(flat.shape)
                selector[k] = 1
                row = _grads((flat,), inputs, (selector,), create_graph, strict, "output", f"Output {index}")
                for j, g in enumerate(row):
                    rows[j].append(g.reshape(-1))
            blocks.append(tuple(_stacked(r, out, x) for r, x in zip(rows, inputs)))
    blocks = _finished(tuple(blocks), create_graph)
    if out_tuple:
        return tuple(b if is_tuple else b[0] for b in blocks)
    return blocks[0] if is_tuple else blocks[0][0]


def _stacked(rows: list, out, x):
    if not rows:
        return x.new_zeros(tuple(out.shape) + tuple(x.shape))
    return table_op("stack", rows).reshape(tuple(out.shape) + tuple(x.shape))


def _single_element(func: Callable, fn_name: str) -> Callable:
    def checked(*args):
        out = func(*args)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
        if is_tuple:
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if outs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                               "element")
        return outs[0]
    return checked


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient (tuples of tuples for tuple inputs)."""
    scalar = _single_element(func, "hessian")
    is_tuple, _ = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def gradient(*args):
        out = scalar(*args)
        if strict:
            _require_differentiable_outputs((out,))
        # torch's inner jacobian is not strict: an unused input gets zeros, which the check below names
        found = _grads((out,), args, (out.new_ones(out.shape),), True, False, "output")
        if strict:
            _require_differentiable_jacobian(found)
        return found if is_tuple else found[0]
    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                    strategy=outer_jacobian_strategy)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T H) for a scalar function."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v) for a scalar function (the Hessian is symmetric, so this is v^T H transposed)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph: bool, strict: bool, fn_name: str):
    scalar = _single_element(func, fn_name)
    with enable_grad():
        is_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
        inputs = _prepared(inputs, create_graph)
        vs = _vectors(v, inputs, is_tuple, fn_name, "the input to the user-provided function is")
        out = scalar(*inputs)
        first = _grads((out,), inputs, (out.new_ones(out.shape),), True, strict, "output")
        if strict:
            _require_differentiable_jacobian(first)
        result = _grads(first, inputs, vs, create_graph, strict, "jacobian")
    return _finished(out, create_graph), _finished(result if is_tuple else result[0], create_graph)
