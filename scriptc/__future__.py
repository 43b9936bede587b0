"""torch.__future__: the switches that choose how Module.to/.float()/... and load_state_dict replace a
module's parameters (kept objects with new data, new Parameter objects, or swapped contents)."""

__all__ = ["set_overwrite_module_params_on_conversion", "get_overwrite_module_params_on_conversion",
           "set_swap_module_params_on_conversion", "get_swap_module_params_on_conversion"]

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """With True, module conversions (`.to()`, `.double()`, ...) give the module new Parameter objects
    instead of replacing the data of the existing ones (references held elsewhere see the old values)."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """With True, module conversions and `load_state_dict` swap the converted contents into the existing
    Parameter objects with `torch.utils.swap_tensors` (takes precedence over the overwrite switch)."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    return _swap_module_params_on_conversion
