"""torch.func's autodiff transforms (grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian), built on
scriptc.autograd: each call runs the function once with its differentiated inputs tracked, then asks
autograd for the gradients. Transforms nest (grad of grad) through create_graph."""

from __future__ import annotations

import functools

from scriptc import autograd
from scriptc.autograd.function import func_transform
from scriptc.tensors import Tensor


def _flatten(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _flatten(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _flatten(v)]
    return []


def _rebuild(value, leaves: iter):
    """value's structure with its tensors replaced, in order, by the next of `leaves`."""
    if isinstance(value, Tensor):
        return next(leaves)
    if isinstance(value, (tuple, list)):
        return type(value)(_rebuild(v, leaves) for v in value)
    if isinstance(value, dict):
        return {k: _rebuild(v, leaves) for k, v in value.items()}
    return value


def _tracked(value):
    """value's tensors as tensors that record gradient: an input an outer transform already tracks
    is kept (so gradients nest), others become fresh leaves."""
    return _rebuild(value, iter([t if t.requires_grad else t.detach().requires_grad_(True)
                                 for t in _flatten(value)]))


def _nested(leaves: list) -> bool:
    """Whether an outer transform differentiates through this one (it must then build a graph)."""
    return any(t.grad_fn is not None or t.requires_grad for t in leaves) and autograd.is_grad_enabled()


def _argnums(argnums, count: int, name: str) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -count <= n < count:
            raise RuntimeError(f"{name}: Got argnums={n} but only {count} positional inputs")
    return tuple(n % count for n in nums)


def _gradients(outputs: list, inputs: list, cotangents, create_graph: bool) -> list:
    found = autograd.grad(outputs, inputs, cotangents, retain_graph=True, create_graph=create_graph,
                          allow_unused=True)
    return [g if g is not None else t.new_zeros(t.shape) for g, t in zip(found, inputs)]


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """func(*args) -> (gradient of its scalar output w.r.t. args[argnums], the output) [with aux]."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "grad_and_value")
        outer = [t for n in nums for t in _flatten(args[n])]
        with autograd.enable_grad():
            args = tuple(_tracked(a) if i in nums else a for i, a in enumerate(args))
            with func_transform():
                out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   f"instead?")
            inputs = [t for n in nums for t in _flatten(args[n])]
            grads = iter(_gradients([out], inputs, None, _nested(outer)))
        per_arg = tuple(_rebuild(args[n], grads) for n in nums)
        result = per_arg[0] if isinstance(argnums, int) else per_arg
        value = out if _nested(outer) else out.detach()
        return (result, (value, aux)) if has_aux else (result, value)
    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The function computing the gradient of func's scalar output w.r.t. args[argnums] (a tuple of
    gradients for a tuple of argnums; each shaped like its input, nested inputs too)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradients, value = both(*args, **kwargs)
        return (gradients, value[1]) if has_aux else gradients
    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the vector-Jacobian product for each primal."""
    nested = _nested(_flatten(primals))
    with autograd.enable_grad():
        tracked = _tracked(primals)
        with func_transform():
            out = func(*tracked)
        aux = None
        if has_aux:
            out, aux = out
    inputs = _flatten(tracked)

    def vjp_fn(cotangents):
        outputs = _flatten(out)
        given = _flatten(cotangents)
        if len(given) != len(outputs):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {len(given)} tensors, "
                               f"primal output: {len(outputs)} tensors")
        with autograd.enable_grad():
            return _rebuild(tuple(tracked), iter(_gradients(outputs, inputs, given, nested)))

    result = out if nested else _rebuild(out, iter([t.detach() for t in _flatten(out)]))
    return (result, vjp_fn, aux) if has_aux else (result, vjp_fn)


def _jacobian(func, argnums, has_aux: bool, name: str):
    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums(argnums, len(args), name)
        outer = [t for n in nums for t in _flatten(args[n])]
        with autograd.enable_grad():
            tracked = tuple(_tracked(a) if i in nums else a for i, a in enumerate(args))
            with func_transform():
                out = func(*tracked)
            aux = None
            if has_aux:
                out, aux = out
            inputs = [[t for t in _flatten(tracked[n])] for n in nums]
            flat_inputs = [t for group in inputs for t in group]
            per_output = [_output_jacobian(o, flat_inputs, _nested(outer)) for o in _flatten(out)]
        jacobians = _rebuild(out, iter([_group(j, nums, [tracked[n] for n in nums], isinstance(argnums, int))
                                        for j in per_output]))
        return (jacobians, aux) if has_aux else jacobians
    return wrapper


def _output_jacobian(output: Tensor, inputs: list, create_graph: bool) -> list:
    """d output / d input for each input, shaped output.shape + input.shape."""
    import scriptc

    flat = output.reshape(-1)
    rows = []
    for k in range(flat.numel()):
        rows.append(_gradients([flat[k]], inputs, None, create_graph))
    return [scriptc.stack([row[i] for row in rows]).reshape(tuple(output.shape) + tuple(t.shape))
            if rows else t.new_zeros(tuple(output.shape) + tuple(t.shape)) for i, t in enumerate(inputs)]


def _group(jacobians: list, nums: tuple, args: list, single: bool):
    leaves = iter(jacobians)
    per_arg = tuple(_rebuild(a, leaves) for a in args)
    return per_arg[0] if single else per_arg


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None):
    """The Jacobian of func w.r.t. args[argnums], by reverse mode: output.shape + input.shape per pair."""
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of func w.r.t. args[argnums] (the same values jacrev gives; scriptc computes both by
    reverse mode)."""
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func, argnums=0):
    """The Hessian of scalar-valued func w.r.t. args[argnums]: the Jacobian of its gradient."""
    return jacfwd(jacrev(func, argnums), argnums)


def jvp(func, primals, tangents, *, has_aux: bool = False):
    """(func(*primals), the Jacobian-vector product with tangents)."""
    if len(primals) != len(tangents) or len(_flatten(primals)) != len(_flatten(tangents)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure")
    jacobian = _jacobian(func, tuple(range(len(primals))), has_aux, "jvp")(*primals)
    if has_aux:
        jacobian, aux = jacobian
    with autograd.no_grad():
        out = func(*primals)
        if has_aux:
            out = out[0]
        outputs = _flatten(out)
        per_output = _at_leaves(out, jacobian)
        products = []
        for output, per_input in zip(outputs, per_output):
            total = output.new_zeros(output.shape)
            for j, tangent in zip(_flatten(per_input), _flatten(tangents)):
                if tangent.dim():
                    total = total + (j * tangent).sum(dim=list(range(output.dim(), j.dim())))
                else:
                    total = total + j * tangent
            products.append(total)
    result = _rebuild(out, iter(products))
    return (out, result, aux) if has_aux else (out, result)


def _at_leaves(structure, value) -> list:
    """The parts of `value` (a structure holding `structure`'s shape) where `structure` holds tensors."""
    if isinstance(structure, Tensor):
        return [value]
    if isinstance(structure, (tuple, list)):
        return [part for s, v in zip(structure, value) for part in _at_leaves(s, v)]
    if isinstance(structure, dict):
        return [part for key in structure for part in _at_leaves(structure[key], value[key])]
    return []


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product of func at primals,
    as jvp(func, primals, tangents)[1] gives it."""
    with autograd.no_grad():
        out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn
