"""quantize_dynamic: a float model with its nn.Linear / nn.LSTM / nn.GRU / RNN cell layers swapped for dynamically quantized ones
(torch.ao.quantization.quantize_dynamic, as PyTorch's dynamic quantization tutorials call it)."""

from __future__ import annotations

import copy

from scriptc import nn
from scriptc.ao.nn.quantized import dynamic as nnqd
from scriptc.types import float16, qint8, quint8

from .qconfig import QConfig, default_dynamic_qconfig, float16_dynamic_qconfig

__all__ = ["quantize_dynamic", "get_default_dynamic_quant_module_mappings", "propagate_qconfig_", "convert",
           "prepare", "quantize"]

# The module types torch quantizes by default with dtype=qint8.
_DEFAULT_QINT8_TYPES = (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell)


def get_default_dynamic_quant_module_mappings() -> dict:
    """Float module type -> the dynamically quantized module type that replaces it."""
    return {nn.Linear: nnqd.Linear, nn.LSTM: nnqd.LSTM, nn.GRU: nnqd.GRU, nn.LSTMCell: nnqd.LSTMCell,
            nn.GRUCell: nnqd.GRUCell, nn.RNNCell: nnqd.RNNCell}


def _spec_for(qconfig_spec, dtype) -> dict:
    """{module type or name: qconfig}: `qconfig_spec` as given where it is a dict, else dtype's default
    qconfig for the module types of the set given (by default: those torch quantizes)."""
    if qconfig_spec is not None and not isinstance(qconfig_spec, (set, frozenset, list, tuple)):
        return dict(qconfig_spec)
    if dtype is quint8:
        raise NotImplementedError("quantize_dynamic with dtype=torch.quint8 (weight-only quantized "
                                  "nn.Embedding/nn.EmbeddingBag) is not supported by scriptc yet")
    qconfig = default_dynamic_qconfig if dtype is qint8 else float16_dynamic_qconfig if dtype is float16 else None
    if qconfig is None and qconfig_spec is None:
        raise ValueError(f"Don't know how to quantize with default settings for {dtype}. Provide full qconfig please")
    if qconfig is None:
        raise RuntimeError("Unknown dtype specified for quantize_dynamic: ", str(dtype))
    return dict.fromkeys(_DEFAULT_QINT8_TYPES if qconfig_spec is None else qconfig_spec, qconfig)


def propagate_qconfig_(module: nn.Module, qconfig_dict: dict, prefix: str = "", parent_qconfig=None) -> None:
    """Give every submodule its `qconfig`: by its name, else its exact type, else its parent's."""
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    if qconfig is not None and not isinstance(qconfig, QConfig):
        raise TypeError(f"qconfig for {type(module).__name__} must be a QConfig, got {type(qconfig).__name__}")
    module.qconfig = qconfig
    for name, child in module.named_children():
        propagate_qconfig_(child, qconfig_dict, f"{prefix}.{name}" if prefix else name, qconfig)


def _swap(module: nn.Module, mapping: dict) -> nn.Module:
    if getattr(module, "qconfig", None) is None:
        return module
    target = mapping.get(type(module))
    return module if target is None else target.from_float(module)


def convert(module: nn.Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True) -> nn.Module:
    """Swap every submodule that has a qconfig and a quantized counterpart in `mapping` for it."""
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    if remove_qconfig:
        for m in module.modules():
            m.__dict__.pop("qconfig", None)
    return module


def _convert(module: nn.Module, mapping: dict) -> None:
    swapped = {}
    for name, child in module.named_children():
        _convert(child, mapping)
        swapped[name] = _swap(child, mapping)
    for name, child in swapped.items():
        module._modules[name] = child


def quantize_dynamic(model: nn.Module, qconfig_spec=None, dtype=qint8, mapping: dict | None = None,
                     inplace: bool = False) -> nn.Module:
    """The model (a deep copy unless inplace) in eval mode with its submodules swapped for dynamically
    quantized ones: weights quantized to int8 once, activations quantized per call.

    qconfig_spec: a set of module types or submodule names quantized with `dtype` (torch.qint8), or a
    dict from those to a QConfig (`per_channel_dynamic_qconfig` quantizes weights per output channel);
    None quantizes every nn.Linear, nn.LSTM, nn.GRU and RNN cell. The model itself is never swapped, only
    its submodules, as torch does. dtypes other than torch.qint8 raise NotImplementedError.
    """
    spec = _spec_for(qconfig_spec, dtype)
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, spec)
    convert(model, mapping, inplace=True)
    return model


def _static_quantization(*args, **kwargs):
    raise NotImplementedError("static quantization (torch.ao.quantization.prepare / convert / quantize) is not "
                              "supported by scriptc: use torch.ao.quantization.quantize_dynamic")


prepare = quantize = _static_quantization
