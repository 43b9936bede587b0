"""The dynamically quantized Linear (torch.ao.nn.quantized.dynamic.Linear): a qint8 weight, a float bias,
the input quantized per call (scriptc/ops/quantized.py `quantized_linear_dynamic`)."""

from __future__ import annotations

from typing import Optional

import numpy as np

import scriptc
from scriptc import nn
from scriptc.nn.functional._calls import _op
from scriptc.nn.linear import NonDynamicallyQuantizableLinear
from scriptc.tensors import Tensor, wrap
from scriptc.types import float16, qint8

from ....quantization.observer import quantize_weight

__all__ = ["Linear", "LinearPackedParams", "quantized_linear_dynamic", "register_quantized", "weight_parts"]


def weight_observer_for(mod: nn.Module):
    """The weight observer mod's qconfig names (default_dynamic_qconfig's without one), checked to be qint8."""
    from ....quantization.qconfig import default_dynamic_qconfig

    qconfig = getattr(mod, "qconfig", None)
    observer = (qconfig.weight if qconfig is not None and qconfig.weight is not None
                else default_dynamic_qconfig.weight)()
    if observer.dtype is float16:
        raise NotImplementedError("float16 dynamic quantization (dtype=torch.float16) is not supported by scriptc yet")
    if observer.dtype is not qint8:
        raise AssertionError("The only supported dtypes for dynamic quantized linear are qint8 and float16, got: "
                             f"{observer.dtype}")
    return observer


def check_float_recurrent(cls, mod: nn.Module) -> None:
    """torch's checks of the float cell or RNN a dynamically quantized one is made from (from_float)."""
    if type(mod) is not cls._FLOAT_MODULE:
        raise AssertionError(f"nn.quantized.dynamic.{cls.__name__}.from_float only works for "
                             f"nn.{cls._FLOAT_MODULE.__name__}")
    if not hasattr(mod, "qconfig"):
        raise AssertionError("Input float module must have qconfig defined")
    if not mod.bias:
        raise AssertionError("mod.bias must be True")


def quantized_linear_dynamic(input: Tensor, weight_integers: Tensor, weight_scales: Tensor,
                             weight_zero_points: Tensor, bias: Optional[Tensor] = None,
                             reduce_range: bool = True) -> Tensor:
    """torch.ops.quantized.linear_dynamic over a qint8 weight given by its parts (see weight_parts)."""
    return _op("quantized_linear_dynamic", input, weight_integers, weight_scales, weight_zero_points, bias,
               reduce_range)


quantized_linear_dynamic._scriptc_op = "quantized_linear_dynamic"  # jit.script calls the op


def weight_parts(weight: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """A qint8 weight as the plain tensors the op reads: its int8 integers (a view), its float32 scales and
    int64 zero points (one, or one per output channel). Traces, scripts and archives hold these."""
    array = weight._data
    if array.scales is None:
        scales, zero_points = np.array([array.scale], np.float32), np.array([array.zero_point], np.int64)
    else:
        scales, zero_points = array.scales.astype(np.float32), array.zero_points.astype(np.int64)
    return wrap(array.integers()), wrap(scales), wrap(zero_points)


def register_quantized(module: nn.Module, weight_name: str, weight: Tensor, bias_name: str,
                       bias: Optional[Tensor]) -> None:
    """weight's parts as module's non-persistent buffers `<weight_name>_integers`, `_scales` and
    `_zero_points`, and the bias (or None) as `<bias_name>`: what forward reads, outside the state_dict."""
    for suffix, part in zip(("integers", "scales", "zero_points"), weight_parts(weight)):
        module.register_buffer(f"{weight_name}_{suffix}", part, persistent=False)
    module.register_buffer(bias_name, None if bias is None else bias.detach(), persistent=False)


class LinearPackedParams(nn.Module):
    """Holds a quantized Linear's (weight, bias); in the state_dict as `_packed_params` and `dtype`, as torch's.
    The weight's parts are its non-persistent buffers, what forward (traced or scripted) reads."""

    _version = 3

    def __init__(self, dtype=qint8):
        super().__init__()
        self.dtype = dtype
        self.set_weight_bias(scriptc.quantize_per_tensor(scriptc.zeros(1, 1), 1.0, 0, qint8), None)

    def set_weight_bias(self, weight: Tensor, bias: Optional[Tensor]) -> None:
        if not weight.is_quantized or weight.dtype is not qint8 or weight.dim() != 2:
            raise RuntimeError("quantized::linear_prepack expects a 2-D qint8 quantized weight")
        self._packed_params = (weight, bias)
        register_quantized(self, "weight", weight, "bias", bias)

    def _weight_bias(self):
        return self._packed_params

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        if prefix + "dtype" in state_dict:
            self.dtype = state_dict.pop(prefix + "dtype")
        if prefix + "_packed_params" in state_dict:
            weight, bias = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(weight, bias)
        elif strict:
            missing_keys.append(prefix + "_packed_params")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def __repr__(self) -> str:
        return repr(self._weight_bias())


class Linear(nn.Module):
    """y = x W^T + b with W quantized to qint8 once and x quantized to quint8 on every call (its own
    range, 0..127 as torch's x86 engine does), the product accumulated in int32 and rescaled to float.
    Outputs match torch's quantized model to within a quantization step."""

    _version = 4

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=qint8):
        super().__init__()
        if dtype is not qint8:
            raise NotImplementedError(f"scriptc's dynamic quantized Linear supports dtype torch.qint8, got {dtype}")
        self.in_features, self.out_features = in_features, out_features
        bias = scriptc.zeros(out_features) if bias_ else None
        weight = scriptc.quantize_per_tensor(scriptc.zeros(out_features, in_features), 1.0, 0, qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0
        self.version = 4

    def forward(self, x: Tensor) -> Tensor:
        packed = self._packed_params
        return quantized_linear_dynamic(x, packed.weight_integers, packed.weight_scales, packed.weight_zero_points,
                                        packed.bias, True)

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}, qscheme={self.weight().qscheme()}")

    def __repr__(self) -> str:
        # torch hides the packed parameters child
        return f"{self._get_name()}({self.extra_repr()})"

    def weight(self) -> Tensor:
        """The qint8 weight."""
        return self._packed_params._weight_bias()[0]

    def bias(self) -> Optional[Tensor]:
        """The float bias (None without one)."""
        return self._packed_params._weight_bias()[1]

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def set_weight_bias(self, w: Tensor, b: Optional[Tensor]) -> None:
        self._packed_params.set_weight_bias(w, b)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = scriptc.tensor(self.scale)
        destination[prefix + "zero_point"] = scriptc.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name, convert in (("scale", float), ("zero_point", int)):
            if prefix + name in state_dict:
                setattr(self, name, convert(state_dict.pop(prefix + name)))
            elif strict:
                missing_keys.append(prefix + name)
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> "Linear":
        """The dynamically quantized counterpart of a float nn.Linear that carries a `qconfig`."""
        float_modules = [nn.Linear, NonDynamicallyQuantizableLinear]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 f"{[m.__name__ for m in float_modules]}, got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        observer = weight_observer_for(mod)
        observer(mod.weight)
        qlinear = cls(mod.in_features, mod.out_features, dtype=observer.dtype)
        qlinear.set_weight_bias(quantize_weight(mod.weight.detach(), observer), mod.bias)
        return qlinear
