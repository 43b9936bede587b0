"""scriptc.nn.init: in-place parameter initialisers with PyTorch's formulas (run without grad)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from scriptc import autograd
from scriptc.ops.generator import Generator
from scriptc.ops.generator import generator as _numpy_generator
from scriptc.tensors import Tensor
from scriptc.torch_names import missing_attribute as _missing_attribute


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity ('relu' gives sqrt(2), 'tanh' 5/3, ...)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:]) if tensor.dim() > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _rng(generator: Generator | None):
    """numpy's random source behind a torch.Generator (the default one when None)."""
    return _numpy_generator(np, generator)


def _write(tensor: Tensor, values) -> Tensor:
    """Write `values` (a number, an array, or a function of the shape that draws them) into tensor,
    recording nothing for autograd. A meta tensor holds no values: nothing is drawn for it."""
    if tensor.is_meta:
        return tensor
    if callable(values):
        values = values(tensor._data.shape)
    with autograd.no_grad():
        tensor._data[...] = values
        tensor._vc[0] += 1
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    return _write(tensor, lambda shape: _rng(generator).uniform(a, b, shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    return _write(tensor, lambda shape: _rng(generator).normal(mean, std, shape))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    def draw(shape):
        rng = _rng(generator)
        values = rng.normal(mean, std, shape)
        bad = (values < a) | (values > b)
        while bad.any():
            values[bad] = rng.normal(mean, std, int(bad.sum()))
            bad = (values < a) | (values > b)
        return values
    return _write(tensor, draw)


def constant_(tensor: Tensor, val: float) -> Tensor:
    return _write(tensor, val)


def ones_(tensor: Tensor) -> Tensor:
    return _write(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    return _write(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, lambda shape: np.eye(*shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A {3, 4, 5}-D convolution weight that passes each of (up to) out_channels // groups input channels per
    group straight through: 1 at the kernel's center, 0 elsewhere."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tensor._data.shape
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = shape[0] // groups

    def draw(shape):
        values = np.zeros(shape)
        center = tuple(k // 2 for k in shape[2:])
        for g in range(groups):
            for d in range(min(per_group, shape[1])):
                values[(g * per_group + d, d) + center] = 1
        return values
    return _write(tensor, draw)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D tensor from N(0, std) with ceil(sparsity * rows) zeros in each column, at random rows."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    def draw(shape):
        rows, cols = shape
        rng = _rng(generator)
        values = rng.normal(0, std, (rows, cols))
        zeros = int(math.ceil(sparsity * rows))
        for column in range(cols):
            values[rng.permutation(rows)[:zeros], column] = 0
        return values
    return _write(tensor, draw)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He init: uniform(-b, b) with b = gain * sqrt(3 / fan); Linear and Conv2d use a=sqrt(5)."""
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    def draw(shape):
        rows = shape[0]
        cols = math.prod(shape) // rows
        flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return gain * q.reshape(shape)
    return _write(tensor, draw)


__getattr__ = _missing_attribute("torch.nn.init", __name__)


def _deprecated(method):
    """torch's old spellings without the trailing underscore: they warn, then run the in-place init."""
    old_name = method.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{method.__name__}`.",
                      FutureWarning, stacklevel=2)
        return method(*args, **kwargs)
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: {method.__name__}."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
