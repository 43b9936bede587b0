"""Module and Parameter, with PyTorch's semantics: registration, traversal, hooks, state_dict, conversion."""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from typing import Any, Callable, Iterator, Mapping, NamedTuple

import numpy as np

from scriptc import __future__ as future
from scriptc import autograd
from scriptc.tensors import Tensor, wrap

from scriptc.utils.hooks import RemovableHandle
from scriptc.utils.swap import swap_tensors
from scriptc.tensor_functions import typename as _typename

from .hooks import ModuleHooks, add_hook
from .module_conversion import ModuleConversion
from .parameter import Buffer, Parameter

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeysFields(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class _IncompatibleKeys(_IncompatibleKeysFields):
    """What load_state_dict returns: the missing and unexpected keys."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module(ModuleHooks, ModuleConversion):
    """Base class of every layer and model: holds parameters, buffers and submodules by name."""

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        for name in ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                     "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            setattr_(self, name, OrderedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_is_full_backward_hook", None)

    # --- attribute registration ----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Buffer):
            if "_buffers" not in d:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            _remove_from(name, d, self._parameters, self._modules)
            self.register_buffer(name, value.plain(), persistent=value.persistent)
        elif isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            self._modules[name] = value
        elif "_modules" in d and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = value
        elif "_buffers" in d and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (BatchNorm's running_mean); in state_dict if persistent."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under `name` (what assigning a Module attribute does)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module: "Module | None") -> None:
        """Alias of add_module."""
        self.add_module(name, module)

    # --- traversal ----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) for this module and every descendant; shared modules once unless
        remove_duplicate=False."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator["Module"]:
        for _, c in self.named_children():
            yield c

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def _get_name(self) -> str:
        return type(self).__name__

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path `target` ("" is self)."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put `module` at dotted path `target`, replacing a submodule there or (unless strict) adding one
        to an existing parent."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        path, _, name = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def _get_member(self, target: str, store: str, kind: str):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        if name not in getattr(module, store):
            raise AttributeError("`" + name + "` is not " + kind)
        return getattr(module, name)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`."""
        return self._get_member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        return self._get_member(target, "_buffers", "a buffer")

    def get_extra_state(self) -> Any:
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue to report this bug.")

    # --- state ----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (`fc1.weight`, `bn.running_mean`)."""
        if args:
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            out = OrderedDict()
            out._metadata = OrderedDict()
        else:
            out = destination
        # each module's class `_version`, by module path: _load_from_state_dict reads it back to
        # convert checkpoints an older version of the class wrote (as torch's state_dict records it)
        local_metadata = {"version": self._version}
        if hasattr(out, "_metadata"):
            out._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(out, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=out, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, out, prefix, local_metadata)
            if result is not None:
                out = result
        return out

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), self._buffers.items())
                       if v is not None and k not in self._non_persistent_buffers_set}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                if not hasattr(value, "__array__"):
                    error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                      f"Tensor-like object from checkpoint but received {type(value)}")
                    continue
                value = wrap(np.asarray(value))
            if param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
                value = value.reshape(())
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            with autograd.no_grad():
                if assign:
                    if isinstance(param, Parameter) and not isinstance(value, Parameter):
                        value = Parameter(value.detach(), requires_grad=param.requires_grad)
                    setattr(self, name, value)
                else:
                    if param.is_meta and not value.is_meta:
                        warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                                      "parameter in the current model, which is a no-op. (Did you mean to pass "
                                      "`assign=True` to assign items in the state dictionary to their corresponding "
                                      "key in the module instead of copying them in place?)", UserWarning,
                                      stacklevel=3)
                    param.copy_(value)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy (or with assign=True, adopt) the values of a state_dict into parameters and buffers.

        Returns the (missing_keys, unexpected_keys) named tuple; with strict=True either kind of key,
        and a shape mismatch in any case, raises RuntimeError worded as torch's.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, prefix, keep_vars) runs before this module's state_dict() collects anything."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) runs after this module's state_dict(); it
        edits the state_dict in place (returning anything else than None is a RuntimeError)."""
        def checked(*args):
            if hook(*args) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return add_hook(self._state_dict_hooks, checked)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The older form of register_state_dict_post_hook: a hook returning a dict replaces the state_dict."""
        return add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors) runs first."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """The older form of register_load_state_dict_pre_hook: the hook gets the module first only with
        with_module=True (state_dict, prefix, local_metadata, strict, missing, unexpected, errors)."""
        return add_hook(self._load_state_dict_pre_hooks, (lambda *args: hook(self, *args)) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, incompatible_keys) runs after load_state_dict; it may edit the key lists in place."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    # --- modes and conversion -----------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad._data[...] = 0

    def _apply(self, fn, recurse: bool = True) -> "Module":
        """Apply `fn` to every parameter, gradient and buffer. Parameters keep their identity (their
        data is replaced, or with torch.__future__'s swap switch their contents swapped), so optimizers
        and tied weights still see them; torch.__future__'s overwrite switch makes new Parameters."""
        if recurse:
            for child in self.children():
                child._apply(fn)
        swap = future.get_swap_module_params_on_conversion()
        overwrite = future.get_overwrite_module_params_on_conversion()
        with autograd.no_grad():
            for key, p in self._parameters.items():
                if p is None:
                    continue
                new = fn(p)
                grad = p.grad
                if new is not p:
                    if swap:
                        swap_tensors(p, Parameter(new, requires_grad=p.requires_grad))
                        p.grad = grad
                    elif overwrite:
                        p = self._parameters[key] = Parameter(new.detach(), requires_grad=p.requires_grad)
                    else:
                        p.data = new
                if grad is not None:
                    new_grad = fn(grad)
                    if new_grad is not grad:
                        if swap:
                            swap_tensors(grad, new_grad.detach())
                        else:
                            p.grad = new_grad.detach()
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call fn on every submodule (children first) and then on self, as for weight initialisation."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def share_memory(self) -> "Module":
        """Move parameters, buffers and existing gradients into shared memory, in place, so that
        processes given this module (Hogwild training) all read and update the same values."""
        from scriptc.multiprocessing.shared_memory import move_to_shared_memory

        tensors = [t for m in self.modules() for store in (m._parameters, m._buffers) for t in store.values()
                   if t is not None]
        move_to_shared_memory(tensors + [t.grad for t in tensors if t.grad is not None])
        return self

    # --- calling and printing -------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    _compiled_call_impl = None  # set by compile(): what calls run instead of _call_impl

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        # (the common case in this frame, not through _call_impl: a frame less on every module call)
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_impl(self, *args, **kwargs):
        """A call as it runs uncompiled: forward, with the module's hooks around it where it has any."""
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls in place with torch.compile's arguments (`model.compile()`): the module
        stays itself (same state_dict keys), its calls run the compiled program."""
        import scriptc

        self._compiled_call_impl = scriptc.compile(self._call_impl, *args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        children = [f"({name}): " + repr(module).replace("\n", "\n  ") for name, module in self._modules.items()]
        main = self._get_name() + "("
        if lines or children:
            if len(lines) == 1 and not children:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines + children) + "\n"
        return main + ")"

    def __dir__(self):
        keys = dir(type(self)) + list(self.__dict__) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
                     "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)


def _remove_from(name: str, *stores) -> None:
    for store in stores:
        if isinstance(store, set):
            store.discard(name)
        else:
            store.pop(name, None)
