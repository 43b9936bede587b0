"""functional_call: run a module with some of its parameters and buffers replaced by given tensors
for one call (torch.func.functional_call; torch.nn.utils.stateless.functional_call is its
deprecated spelling), the module restored afterwards."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from scriptc.nn.module import Module
from scriptc.tensors import Tensor

__all__ = ["functional_call"]

# The value of an attribute a module did not have (so restoring it deletes the attribute).
_MISSING = object()


def _submodule(module: Module, path: str) -> Module:
    for attr in path.split(".") if path else ():
        try:
            child = getattr(module, attr)
        except AttributeError as error:
            raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from error
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{path}`: {child} is not an instance of torch.nn.Module")
        module = child
    return module


def _swap_tensor(root: Module, name: str, tensor) -> Any:
    """Put `tensor` at dotted `name` (a parameter, buffer or plain attribute); return what was there."""
    prefix, _, attr = name.rpartition(".")
    module = _submodule(root, prefix)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if attr == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if attr in store:
            original = store[attr]
            if tensor is _MISSING:
                del store[attr]
            else:
                store[attr] = tensor
            return original
    original = getattr(module, attr, _MISSING)
    if original is not _MISSING and original is not None and not isinstance(original, Tensor):
        raise TypeError(f"attribute `{attr}`: {original} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, attr, tensor)
    elif original is not _MISSING:
        delattr(module, attr)
    return original


def _swap_all(module: Module, named_tensors: dict) -> dict:
    """Swap every entry in; on an error put back the ones already swapped."""
    originals = {}
    try:
        for name, tensor in named_tensors.items():
            originals[name] = _swap_tensor(module, name, tensor)
    except Exception:
        for name, original in originals.items():
            _swap_tensor(module, name, original)
        raise
    return originals


def _untie(module: Module, parameters_and_buffers: dict) -> dict:
    """Give every name tied to a given name (one tensor under several names) the given value."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of: dict = {}
    for name, tensor in named.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    given_tied = [name for name in parameters_and_buffers if name in tied]
    for name in given_tied:
        names = tied[name]
        if len(names.intersection(given_tied)) > 1 and len(
                {id(parameters_and_buffers[n]) for n in names if n in parameters_and_buffers}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             f"Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for tied_name in tied[name]:
            untied[tied_name] = parameters_and_buffers[name]
    return untied


def _check_keys(module: Module, names) -> None:
    valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
    errors = []
    unexpected, missing = sorted(set(names) - valid), sorted(valid - set(names))
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(errors)))


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False):
    untied = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, untied)
    originals = _swap_all(module, untied)
    try:
        yield
    finally:
        replaced = _swap_all(module, originals)
        # what the call assigned (an in-place update is already in the caller's tensor) goes back
        parameters_and_buffers.update({k: replaced[k] for k in parameters_and_buffers if k in replaced})


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    from scriptc.jit import markers
    from scriptc.jit.module import ScriptFunction, ScriptModule
    from scriptc.nn.parallel import DataParallel

    if markers.is_tracing() or isinstance(module, (ScriptModule, ScriptFunction)):
        raise RuntimeError("The stateless API can't be used with Jitted modules")
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Deprecated spelling of torch.func.functional_call (one dict only); warns FutureWarning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
