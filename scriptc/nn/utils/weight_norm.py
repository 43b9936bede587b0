"""weight_norm and remove_weight_norm, the forward-pre-hook form (torch.nn.utils.weight_norm)."""

from __future__ import annotations

import warnings

from ..module import Module, Parameter
from ._norms import norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The hook that recomputes `module.<name>` = g * v / ||v|| from the parameters `<name>_g` and
    `<name>_v` before every forward."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> "WeightNorm":
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude `<name>_g` and a direction `<name>_v` (parameters), and
    recompute it from them before each forward. Deprecated in torch in favor of
    `parametrizations.weight_norm`, which is what new code should use."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo weight_norm: `<name>` becomes one parameter again, with its current value."""
    return remove_norm_hook(module, WeightNorm, name, "weight_norm")


def remove_norm_hook(module: Module, hook_type: type, name: str, what: str) -> Module:
    """Remove the `hook_type` forward pre-hook on `name` and let it restore the plain parameter."""
    if not remove_pre_hook(module, lambda hook: isinstance(hook, hook_type) and hook.name == name):
        raise ValueError(f"{what} of '{name}' not found in {module}")
    return module


def remove_pre_hook(module: Module, matches) -> bool:
    """Undo the first forward pre-hook `matches(hook)` accepts (its `remove(module)` restores the
    parameter) and unregister it; False when there is none."""
    for key, hook in module._forward_pre_hooks.items():
        if matches(hook):
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return True
    return False
