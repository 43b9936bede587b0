"""Tensor subclasses as torch treats them: `t.as_subclass(cls)`, ops on a subclass's instances giving
instances of it, and a subclass's own `__torch_function__(func, types, args, kwargs)` called for every
torch function and Tensor method its instances reach (torch.overrides' protocol). Parameter (and the
other subclasses scriptc itself makes) opt out with `__torch_function__ = _disabled_torch_function_impl`,
so ops on them cost one class check."""

from __future__ import annotations

# True while a subclass's __torch_function__ runs the function it was given (DisableTorchFunctionSubclass):
# then ops compute as on plain tensors and give plain tensors.
_disabled: list = [False]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """A subclass's `__torch_function__` that opts out of the protocol: its instances act as plain tensors
    (results are plain tensors), as torch.nn.Parameter's do."""
    return func(*args, **(kwargs or {}))


class DisableTorchFunctionSubclass:
    """Within it, subclasses' __torch_function__ is not called and ops on their instances give plain
    tensors (torch._C.DisableTorchFunctionSubclass)."""

    def __enter__(self):
        self._outer = _disabled[0]
        _disabled[0] = True
        return self

    def __exit__(self, *exc) -> None:
        _disabled[0] = self._outer


def dispatches(cls) -> bool:
    """Whether instances of the Tensor subclass `cls` take part in the protocol."""
    handler = cls.__torch_function__
    return getattr(handler, "__func__", handler) is not _disabled_torch_function_impl


def overrides(value) -> bool:
    """Whether `value`, given where a tensor or number belongs, is no tensor but has __torch_function__
    (an object standing in for a tensor, which torch hands the call to)."""
    from scriptc.tensors.core import Tensor

    return not _disabled[0] and hasattr(type(value), "__torch_function__") and not isinstance(value, Tensor)


def subclass_types(values) -> tuple:
    """The types taking part among `values` (or inside lists of them): Tensor subclasses that do, and
    other objects with __torch_function__; each once, a subclass before its bases (the order torch tries
    their __torch_function__ in)."""
    found = []
    for value in values:
        items = value if type(value) in (list, tuple) else (value,)
        for item in items:
            cls = item.__class__
            takes_part = getattr(cls, "_dispatches_subclass", None)
            if (takes_part or takes_part is None and hasattr(cls, "__torch_function__")) and cls not in found:
                found.append(cls)
    return tuple(sorted(found, key=lambda c: -len(c.__mro__)))


def call_torch_function(op, args: tuple, types: tuple):
    """An op call on subclass instances: the first of `types`' __torch_function__ that does not answer
    NotImplemented, given the public function (torch.<name>, or the Tensor method where torch has
    none) and the call's arguments."""
    func = public_function(op)
    positional = tuple(value for arg, value in zip(op.schema.args, args) if not arg.kwarg_only)
    keywords = {arg.name: value for arg, value in zip(op.schema.args, args) if arg.kwarg_only}
    for cls in types:
        result = cls.__torch_function__(func, types, positional, keywords)
        if result is not NotImplemented:
            return result
    raise TypeError(f"no implementation found for '{func.__qualname__}' on types that implement "
                    f"__torch_function__: {[cls for cls in types]}")


def public_function(op):
    from scriptc import bindings
    from scriptc.tensors.core import Tensor

    return bindings.FUNCTIONS.get(op.base_name) or getattr(Tensor, op.base_name)


def default_torch_function(cls, func, types, args=(), kwargs=None):
    """torch.Tensor.__torch_function__: `func` run as on plain tensors, its tensor results (also inside
    tuples and lists) made instances of `cls`; NotImplemented where another of `types` is no base of cls."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        result = func(*args, **(kwargs or {}))
    return convert(result, cls)


def convert(value, cls):
    """`value` with its tensors made instances of `cls` (tuples, named tuples and lists looked into)."""
    from scriptc.tensors.core import Tensor

    if isinstance(value, Tensor):
        return value if isinstance(value, cls) else as_subclass(value, cls)
    if isinstance(value, list):
        return [convert(v, cls) for v in value]
    if isinstance(value, tuple):
        items = [convert(v, cls) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def make_subclass(cls, data, require_grad: bool = False):
    """torch.Tensor._make_subclass: an instance of `cls` over data's storage, without its history,
    requiring grad as asked (how a subclass's __new__ makes its instances)."""
    alias = as_subclass(data.detach(), cls)
    alias.requires_grad = require_grad
    return alias


def as_subclass(tensor, cls):
    """An instance of `cls` (a Tensor subclass) over tensor's data, version counter and autograd history:
    writes through either show in both, and gradients flow back through it to tensor's history."""
    from scriptc.tensors.core import Tensor

    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of torch.Tensor, not "
                        f"{getattr(cls, '__name__', type(cls).__name__)}")
    outer, _disabled[0] = _disabled[0], True
    try:
        alias = tensor.view(list(tensor.shape))
    finally:
        _disabled[0] = outer
    alias.__class__ = cls
    return alias
