"""Lazy modules (torch.nn.LazyLinear, LazyConv2d, LazyBatchNorm2d ...): their input size is read from
the first input. Until then their parameters are UninitializedParameter placeholders; the first
forward (or load_state_dict) gives them their shapes, and the module becomes the plain layer
(`cls_to_become`: a LazyLinear is a Linear afterwards)."""

from __future__ import annotations

import itertools

import numpy as np

from scriptc import autograd
from scriptc.tensors import Tensor, wrap
from scriptc.tensors.core import _init as _init_placeholder
from scriptc.tensors.subclass import _disabled_torch_function_impl
from scriptc.types import default_float

from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .parameter import Parameter

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _Uninitialized:
    """What the two placeholders share: no shape until materialize(shape)."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the placeholder uninitialised storage of `shape`; it becomes a Parameter (or a plain
        buffer tensor)."""
        size = (shape,) if isinstance(shape, int) else tuple(shape)
        self._data = np.empty(size, dtype=dtype.np if dtype is not None else self._data.dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_uninitialized_message("shape"))

    def size(self, dim=None):
        raise ValueError(_uninitialized_message("size"))

    def numel(self) -> int:
        raise ValueError(_uninitialized_message("numel"))

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__


def _no_elements(dtype) -> Tensor:
    """The placeholder's storage: no elements, but the dtype it will be created with (module.to and
    .double() convert it like any parameter's)."""
    return wrap(np.empty((0,), dtype=(dtype or default_float()).np))


def _uninitialized_message(what: str) -> str:
    return (f"Can't access the {what} of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (a lazy module's weight before its first input)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, _no_elements(dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def __reduce_ex__(self, protocol):
        return (UninitializedParameter, (self.requires_grad, None, self.dtype))


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (a lazy batch norm's running statistics); its lazy module
    swaps in a tensor of the right shape."""

    __slots__ = ("persistent",)
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        self = object.__new__(cls)
        _init_placeholder(self, _no_elements(dtype)._data)
        self.requires_grad = requires_grad
        self.persistent = persistent
        return self

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        raise RuntimeError("an UninitializedBuffer takes its shape from its lazy module's first input or "
                           "checkpoint (scriptc swaps in a new tensor rather than changing this one)")

    def to(self, *args, **kwargs) -> "UninitializedBuffer":
        """Still a placeholder, of the converted dtype (module.to / .double() before the first input)."""
        moved = Tensor.to(self, *args, **kwargs)
        if moved is self:
            return self
        return UninitializedBuffer(self.requires_grad, dtype=moved.dtype, persistent=self.persistent)


class LazyModuleMixin:
    """Infers the parameters' shapes from the first input (`initialize_parameters`), then turns the
    module into `cls_to_become`."""

    cls_to_become: type | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)
        self._load_hook = self.register_load_state_dict_pre_hook(self._lazy_load_hook)

    def has_uninitialized_params(self) -> bool:
        return any(isinstance(v, _Uninitialized)
                   for v in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _lazy_load_hook(self, module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs) -> None:
        """A checkpoint gives the placeholders their shapes."""
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            if isinstance(value, _Uninitialized) and prefix + name in state_dict:
                self._materialize(name, tuple(state_dict[prefix + name].shape))

    def _materialize(self, name: str, shape: tuple) -> None:
        value = self._parameters.get(name)
        if value is not None:
            value.materialize(shape)
            return
        placeholder = self._buffers[name]
        self._buffers[name] = wrap(np.empty(shape, dtype=placeholder._data.dtype))

    def _uninitialized(self, name: str) -> bool:
        return isinstance(self._parameters.get(name, self._buffers.get(name)), _Uninitialized)

    def initialize_parameters(self, input: Tensor) -> None:
        """Materialize the placeholders from the first input's channels (dim 1, or 0 when unbatched)."""
        if not self.has_uninitialized_params():
            return
        with autograd.no_grad():
            channels = self._input_channels(input)
            for name, shape in self._shapes(channels).items():
                if self._uninitialized(name):
                    self._materialize(name, shape)
            self.reset_parameters()


def _infer_parameters(module, args) -> None:
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook, module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


def _placeholders(module, names: list[str], dtype, buffers: tuple = ()) -> None:
    """Swap the named parameters (and buffers) that exist for placeholders."""
    for name in names:
        if module._parameters.get(name) is not None:
            module._parameters[name] = UninitializedParameter(dtype=dtype)
    for name in buffers:
        if module._buffers.get(name) is not None:
            module._buffers[name] = UninitializedBuffer(dtype=dtype)


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, bias, device, dtype)
        self.out_features = out_features
        _placeholders(self, ["weight", "bias"], dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def _input_channels(self, input: Tensor) -> int:
        return input.shape[-1]

    def _shapes(self, in_features: int) -> dict:
        self.in_features = in_features
        return {"weight": (self.out_features, in_features), "bias": (self.out_features,)}


class _LazyConvMixin(LazyModuleMixin):
    def __init__(self, out_channels: int, kernel_size, **options):
        super().__init__(0, 0, kernel_size, **options)
        self.out_channels = out_channels
        _placeholders(self, ["weight", "bias"], options.get("dtype"))

    def _input_channels(self, input: Tensor) -> int:
        unbatched = self.dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {list(input.shape)}")
        return input.shape[0 if input.dim() == unbatched else 1]

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _shapes(self, in_channels: int) -> dict:
        self.in_channels = in_channels
        if in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            weight = (in_channels, self.out_channels // self.groups) + tuple(self.kernel_size)
        else:
            weight = (self.out_channels, in_channels // self.groups) + tuple(self.kernel_size)
        return {"weight": weight, "bias": (self.out_channels,)}


def _conv_init(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
               bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
    _LazyConvMixin.__init__(self, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                            groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)


def _transposed_init(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                     bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None):
    _LazyConvMixin.__init__(self, out_channels, kernel_size, stride=stride, padding=padding,
                            output_padding=output_padding, groups=groups, bias=bias, dilation=dilation,
                            padding_mode=padding_mode, device=device, dtype=dtype)


def _lazy_conv(base: type) -> type:
    return type(f"Lazy{base.__name__}", (_LazyConvMixin, base),
                {"cls_to_become": base, "__init__": _transposed_init if base.transposed else _conv_init,
                 "__doc__": f"{base.__name__} whose in_channels is read from the first input's channel dim.",
                 "__module__": __name__})


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, bias: bool = True):
        super().__init__(0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        _placeholders(self, ["weight", "bias"], dtype, ("running_mean", "running_var"))

    def _input_channels(self, input: Tensor) -> int:
        return input.shape[1]

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _shapes(self, num_features: int) -> dict:
        self.num_features = num_features
        return {name: (num_features,) for name in ("weight", "bias", "running_mean", "running_var")}


def _lazy_norm(base: type) -> type:
    # Unlike InstanceNorm, its lazy forms default to affine=True and track_running_stats=True (as torch's).
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        _LazyNormMixin.__init__(self, eps, momentum, affine, track_running_stats, device, dtype, bias)
    return type(f"Lazy{base.__name__}", (_LazyNormMixin, base),
                {"cls_to_become": base, "__init__": __init__, "__module__": __name__,
                 "__doc__": f"{base.__name__} whose num_features is read from the first input's channel dim."})


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d)
LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
