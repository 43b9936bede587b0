"""Parametrizations (torch.nn.utils.parametrize): a module's tensor computed from other tensors on access.

`register_parametrization(module, "weight", p)` moves the parameter to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when p's
`right_inverse` splits it) and gives the module a property `weight` that returns `p(original)`,
so the state_dict keys, optimizers and autograd see what torch's would. Assigning to
`module.weight` goes through `right_inverse`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

from scriptc.autograd import no_grad
from scriptc.tensors import Tensor

from ..container import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside the block each parametrized tensor is computed once, on first access, and reused."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_data(dest: Tensor, src: Tensor) -> None:
    """dest takes src's values and storage (torch's `dest.set_(src)`), keeping its identity."""
    dest._data = src._data
    dest._vc[0] += 1


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the unconstrained `original` tensor(s)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if new is not original:
                with no_grad():
                    _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {value.dtype}")
            if value.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {value.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) so that the parametrized tensor becomes `value`."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_data(self.original, value)
                return
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, part in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type opaques. "
                                     f"Got element {i} of type {type(part).__name__}.")
                if original_i.dtype != part.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {part.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                _set_data(original_i, part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give the module its own subclass, so the properties added for its tensors touch no other module."""
    cls = type(module)

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if _cache.get(key) is None:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make `module.<tensor_name>` computed as `parametrization(original)`; a second registration on the
    same name composes. `unsafe=True` allows the parametrization to change the shape or dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_stacked(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
                         f"'{tensor_name}'")
    return module


def _check_stacked(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A parametrization added on top of another may not change the tensor's shape or dtype."""
    current = getattr(module, tensor_name)
    new = parametrization(current)
    if not isinstance(new, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(new).__name__}.")
    _check_same(current, new, "Registering a parametrization may not change the {what} of the tensor, unless the "
                "`unsafe` flag is enabled.\nmodule.{name}.{what}: {before}\nparametrization(module.{name}).{what}: "
                "{after}", tensor_name)
    if hasattr(parametrization, "right_inverse"):
        try:
            inverse = parametrization.right_inverse(new)
        except NotImplementedError:
            return
        if not isinstance(inverse, Tensor):
            raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(inverse).__name__}")
        _check_same(current, inverse, "The tensor returned by parametrization.right_inverse must have the same {what} "
                    "as module.{name}, unless the `unsafe` flag is enabled.\nmodule.{name}.{what}: {before}\n"
                    "returned {what}: {after}", tensor_name)


def _check_same(before: Tensor, after: Tensor, message: str, name: str) -> None:
    for what in ("dtype", "shape"):
        if getattr(before, what) != getattr(after, what):
            raise ValueError(message.format(what=what, name=name, before=getattr(before, what),
                                            after=getattr(after, what)))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether the module has any parametrization (or one on `tensor_name`)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on `tensor_name`: it becomes a plain parameter (or buffer) again, holding
    its current parametrized value (leave_parametrized=True) or the original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set_data(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    delattr(module.parametrizations, tensor_name)
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before parametrizations gave it a subclass."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register from_module's parametrizations (all, or those on `tensor_name`) on to_module, sharing
    the original tensors."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
