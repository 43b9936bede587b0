"""torch._foreach_*: one op applied across a list of tensors (what optimizers' foreach paths, torch's
foreach_map recipe and hand-written multi-tensor updates call).

Each is built from the tensors' own methods, so dtypes, broadcasting and autograd are theirs. The
out-of-place forms return a tuple, the in-place ones (trailing `_`) the list they were given.
"""

from __future__ import annotations

from numbers import Number
from typing import Callable, Sequence

from scriptc.tensors import Tensor

UNARY_OPS = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
             "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign",
             "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
# name -> (Tensor method with a tensor operand, Tensor method with a scalar one); in place, each method's
# trailing-underscore form where the tensor has one
BINARY_OPS = {"add": ("add", "add"), "sub": ("sub", "sub"), "mul": ("mul", "mul"), "div": ("div", "div"),
              "pow": ("pow", "pow"), "clamp_min": ("clamp_min", "clamp_min"),
              "clamp_max": ("clamp_max", "clamp_max"), "maximum": ("maximum", "clamp_min"),
              "minimum": ("minimum", "clamp_max")}
# ops whose operand may also be one tensor shared by the whole list; ops that take alpha (with tensors)
_TENSOR_OPERAND = {"add", "mul", "div"}
_ALPHA = {"add", "sub"}


def _kind(value) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__


def _tensor_list(op: str, tensors, *others) -> list:
    """The list argument of `_foreach_<op>`, checked as torch checks it."""
    if not isinstance(tensors, (list, tuple)):
        got = ", ".join([_kind(tensors)] + [_kind(o) for o in others])
        raise TypeError(f"_foreach_{op}() received an invalid combination of arguments - got ({got}), but "
                        "expected one of: (tuple of Tensors self, ...)")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(tensors)


def _per_tensor(op: str, tensors: list, operand, allow_tensor: bool = True) -> list:
    """One operand for each tensor of the list: a scalar (or a 0-d tensor) or a single tensor repeated, a
    scalar list or a tensor list taken element by element (a 1-d tensor of scalars for addcmul/addcdiv's
    value)."""
    if isinstance(operand, (list, tuple)):
        if operand and all(isinstance(o, Tensor) for o in operand):
            if len(operand) != len(tensors):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and "
                                   f"{len(operand)}")
            return list(operand)
        if len(operand) != len(tensors):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        if not all(isinstance(o, Number) for o in operand):
            raise TypeError(f"_foreach_{op}(): expected a list of Tensors or a list of scalars")
        return list(operand)
    if isinstance(operand, Tensor) and allow_tensor:
        return [operand] * len(tensors)
    if isinstance(operand, Tensor) and operand.dim() == 0:  # (torch's parser takes a 0-d tensor for a scalar)
        return [operand.item()] * len(tensors)
    if isinstance(operand, Number):
        return [operand] * len(tensors)
    raise TypeError(f"_foreach_{op}() received an invalid combination of arguments - got (list, "
                    f"{_kind(operand)}), but expected a scalar, a list of scalars or a list of Tensors")


def _unary(name: str, inplace: bool) -> Callable:
    def op(self: Sequence[Tensor]):
        tensors = _tensor_list(name, self)
        if inplace:
            for t in tensors:
                getattr(t, name + "_")()
            return self
        return tuple(getattr(t, name)() for t in tensors)
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    op.__doc__ = f"torch.{op.__name__}(tensors): {name} of every tensor{' in place' if inplace else ''}."
    return op


def _binary(name: str, inplace: bool) -> Callable:
    tensor_method, scalar_method = BINARY_OPS[name]

    def op(self, other, *, alpha=None):
        if name == "pow" and isinstance(self, Number) and not inplace:
            return tuple(self ** t for t in _tensor_list(name, other, self))
        tensors = _tensor_list(name, self, other)
        if alpha is not None and (name not in _ALPHA or not isinstance(other, (Tensor, list, tuple))):
            raise TypeError(f"_foreach_{name}() received an invalid combination of arguments - got (list, "
                            f"{_kind(other)}, alpha={type(alpha).__name__}): alpha goes with a tensor operand "
                            "of add or sub")
        operands = _per_tensor(name, tensors, other, allow_tensor=name in _TENSOR_OPERAND)
        extra = {} if alpha is None else {"alpha": alpha}
        results = []
        for t, o in zip(tensors, operands):
            method = tensor_method if isinstance(o, Tensor) else scalar_method
            if inplace and hasattr(t, method + "_"):
                getattr(t, method + "_")(o, **extra)
            elif inplace:
                t.copy_(getattr(t, method)(o, **extra))
            else:
                results.append(getattr(t, method)(o, **extra))
        return self if inplace else tuple(results)
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    op.__doc__ = (f"torch.{op.__name__}(tensors, other): {name} of every tensor with a scalar, a scalar list or "
                  f"a tensor list{' in place' if inplace else ''}.")
    return op


def _pointwise(name: str, inplace: bool) -> Callable:
    def op(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(name, self, tensor1, tensor2)
        firsts = _per_tensor(name, tensors, tensor1)
        seconds = _per_tensor(name, tensors, tensor2)
        if isinstance(value, Tensor):
            value = value.tolist()
        values = _per_tensor(name, tensors, value, allow_tensor=False)
        method = name + "_" if inplace else name
        results = [getattr(t, method)(a, b, value=v) for t, a, b, v in zip(tensors, firsts, seconds, values)]
        return self if inplace else tuple(results)
    op.__name__ = f"_foreach_{name}{'_' if inplace else ''}"
    op.__doc__ = f"torch.{op.__name__}(tensors, tensors1, tensors2, value=1): {name} of every tensor."
    return op


def _lerp(inplace: bool) -> Callable:
    def op(self, tensors1, weight):
        tensors = _tensor_list("lerp", self, tensors1, weight)
        ends = _per_tensor("lerp", tensors, tensors1, allow_tensor=False)
        weights = _per_tensor("lerp", tensors, weight, allow_tensor=False)
        results = [(t.lerp_ if inplace else t.lerp)(e, w) for t, e, w in zip(tensors, ends, weights)]
        return self if inplace else tuple(results)
    op.__name__ = "_foreach_lerp_" if inplace else "_foreach_lerp"
    op.__doc__ = f"torch.{op.__name__}(tensors, ends, weight): linear interpolation of every tensor."
    return op


def _foreach_norm(self, ord=2, dtype=None) -> tuple:
    """torch._foreach_norm(tensors, ord=2, dtype=None): the vector norm of each tensor, as 0-d tensors."""
    from scriptc import linalg
    return tuple(linalg.vector_norm(t, ord, dtype=dtype) for t in _tensor_list("norm", self, ord))


def _foreach_powsum(self, ord=2, dtype=None) -> tuple:
    """torch._foreach_powsum(tensors, ord=2, dtype=None): the sum of |x| ** ord over each tensor."""
    tensors = _tensor_list("powsum", self, ord)
    return tuple((t.abs() if dtype is None else t.abs().to(dtype)).pow(ord).sum() for t in tensors)


def _foreach_max(self) -> tuple:
    """torch._foreach_max(tensors): the largest element of each tensor, as 0-d tensors."""
    return tuple(t.max() for t in _tensor_list("max", self))


def _foreach_mm(self, mat2) -> tuple:
    """torch._foreach_mm(tensors, mat2): the matrix product of each pair."""
    tensors = _tensor_list("mm", self, mat2)
    return tuple(a.mm(b) for a, b in zip(tensors, _per_tensor("mm", tensors, mat2, allow_tensor=False)))


def _foreach_clone(self) -> tuple:
    """torch._foreach_clone(tensors): a copy of each tensor."""
    return tuple(t.clone() for t in _tensor_list("clone", self))


def _foreach_zero_(self):
    """torch._foreach_zero_(tensors): fill every tensor with zeros."""
    for t in _tensor_list("zero_", self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking: bool = False):
    """torch._foreach_copy_(tensors, src): copy each source tensor into its destination."""
    tensors = _tensor_list("copy_", self, src)
    for t, s in zip(tensors, _per_tensor("copy_", tensors, src, allow_tensor=False)):
        t.copy_(s, non_blocking)
    return self


def _build() -> dict:
    ops = {}
    for inplace in (False, True):
        suffix = "_" if inplace else ""
        ops.update({f"_foreach_{name}{suffix}": _unary(name, inplace) for name in UNARY_OPS})
        ops.update({f"_foreach_{name}{suffix}": _binary(name, inplace) for name in BINARY_OPS})
        ops.update({f"_foreach_{name}{suffix}": _pointwise(name, inplace) for name in ("addcmul", "addcdiv")})
        ops[f"_foreach_lerp{suffix}"] = _lerp(inplace)
    for op in (_foreach_norm, _foreach_powsum, _foreach_max, _foreach_mm, _foreach_clone, _foreach_zero_,
               _foreach_copy_):
        ops[op.__name__] = op
    return ops


FOREACH_OPS = _build()
globals().update(FOREACH_OPS)
__all__ = sorted(FOREACH_OPS)
