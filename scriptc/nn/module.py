"""Module, Parameter and the containers (Sequential, ModuleList), with PyTorch's semantics."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator, NamedTuple

import numpy as np

from scriptc import autograd
from scriptc.tensors import Tensor, _tensor_repr, wrap
from scriptc.types import dtype as Dtype
from scriptc.types import float16, float32, float64


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter; requires grad by default."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = wrap(np.empty((0,), dtype=np.float32))
        self = object.__new__(cls)
        source = data._data if isinstance(data, Tensor) else np.asarray(data)
        self._data = source
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self._out_index = 0
        self._vc = data._vc if isinstance(data, Tensor) else [0]
        self._base = None
        return self

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + _tensor_repr(self)

    def __reduce_ex__(self, protocol):
        return (Parameter, (wrap(self._data.copy()), self.requires_grad))


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class Module:
    """Base class of every layer and model: holds parameters, buffers and submodules by name."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # --- attribute registration ----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError("cannot assign parameters or modules before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            buffers.pop(name, None)
            modules.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (BatchNorm's running_mean); in state_dict if persistent."""
        if "." in name or not name:
            raise KeyError(f"buffer name can't contain \".\" or be empty, got '{name}'")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    # --- traversal ----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if remove_duplicate and id(self) in memo:
            return
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
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
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

    def get_submodule(self, target: str) -> "Module":
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target: str) -> Parameter:
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    # --- state ----------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (`fc1.weight`, `bn.running_mean`)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy values into parameters and buffers; accepts tensors or anything numpy can read."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value._data if isinstance(value, Tensor) else np.asarray(value)
            if array.shape != target._data.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape scriptc.Size({list(array.shape)}) "
                              f"from checkpoint, the shape in current model is scriptc.Size("
                              f"{list(target._data.shape)}).")
                continue
            with autograd.no_grad():
                np.copyto(target._data, array, casting="unsafe")
                target._vc[0] += 1
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # --- modes and conversion -----------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
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
                p.grad._data[...] = 0

    def _apply(self, convert) -> "Module":
        for module in self.modules():
            for store in (module._parameters, module._buffers):
                for name, t in store.items():
                    if t is None:
                        continue
                    new = convert(t)
                    if new is t:
                        continue
                    if isinstance(t, Parameter):
                        store[name] = Parameter(new.detach(), t.requires_grad)
                    else:
                        store[name] = new
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Convert floating parameters and buffers to a dtype and/or move them to a device."""
        target = None
        for a in list(args) + [kwargs.get("dtype")]:
            if isinstance(a, Dtype):
                target = a
        for a in list(args) + [kwargs.get("device")]:
            if a is not None and not isinstance(a, Dtype):
                wrap(np.zeros(())).to(a)
        if target is None:
            return self
        return self._apply(lambda t: t.to(target) if t.is_floating_point() else t)

    def float(self) -> "Module":
        return self.to(float32)

    def double(self) -> "Module":
        return self.to(float64)

    def half(self) -> "Module":
        return self.to(float16)

    def cpu(self) -> "Module":
        return self

    def cuda(self, device=None) -> "Module":
        return self.to("cuda")

    def apply(self, fn) -> "Module":
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

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        children = []
        for name, module in self._modules.items():
            text = repr(module).replace("\n", "\n  ")
            children.append(f"({name}): {text}")
        lines = lines + children
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not children:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def __setstate__(self, state):
        self.__dict__.update(state)


class Sequential(Module):
    """Modules applied in order: `Sequential(Linear(4, 8), ReLU())`; keys are "0", "1", ..."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_checked_index(index, len(items))][1]

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_checked_index(index, len(self._modules))]
        self._modules[key] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


def _checked_index(index: int, length: int) -> int:
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


class ModuleList(Module):
    """A list of modules that registers each one (`self.layers = ModuleList([...])`)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_checked_index(index, len(self._modules)))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_checked_index(index, len(self._modules))), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """Modules by name, registered in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            for k, v in (modules.items() if hasattr(modules, "items") else modules):
                self.add_module(k, v)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()
