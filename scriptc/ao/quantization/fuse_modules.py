"""torch.ao.quantization.fuse_modules: runs of modules (conv, bn, relu) replaced by one fused module - in
eval mode a BatchNorm folded into the layer before it, a ReLU kept in an intrinsic module with it - and
the rest by Identity, as torchvision's quantizable models' fuse_model() asks."""

from __future__ import annotations

import copy

from scriptc import nn
from scriptc.ao.nn import intrinsic as nni
from scriptc.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

__all__ = ["fuse_modules", "fuse_known_modules", "get_fuser_method"]


def _same_mode(first, second) -> None:
    if first.training != second.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")


def _conv_bn(is_qat, conv, bn):
    _same_mode(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def _conv_bn_relu(is_qat, conv, bn, relu):
    _same_mode(conv, bn)
    return _CONV_RELU[type(conv)](fuse_conv_bn_eval(conv, bn), relu)


def _conv_relu(is_qat, conv, relu):
    return _CONV_RELU[type(conv)](conv, relu)


def _linear_bn(is_qat, linear, bn):
    _same_mode(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def _convtranspose_bn(is_qat, convt, bn):
    _same_mode(convt, bn)
    return fuse_conv_bn_eval(convt, bn, transpose=True)


_CONV_RELU = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d, nn.Conv3d: nni.ConvReLU3d}
_BATCH_NORM = {nn.Conv1d: nn.BatchNorm1d, nn.Conv2d: nn.BatchNorm2d, nn.Conv3d: nn.BatchNorm3d}
# (module types, in order) -> fuser(is_qat, *modules): torch's default fuser method mappings
_FUSERS = {
    **{(conv, bn): _conv_bn for conv, bn in _BATCH_NORM.items()},
    **{(conv, bn, nn.ReLU): _conv_bn_relu for conv, bn in _BATCH_NORM.items()},
    **{(conv, nn.ReLU): _conv_relu for conv in _CONV_RELU},
    (nn.Linear, nn.ReLU): lambda is_qat, linear, relu: nni.LinearReLU(linear, relu),
    (nn.Linear, nn.BatchNorm1d): _linear_bn,
    (nn.BatchNorm2d, nn.ReLU): lambda is_qat, bn, relu: nni.BNReLU2d(bn, relu),
    (nn.BatchNorm3d, nn.ReLU): lambda is_qat, bn, relu: nni.BNReLU3d(bn, relu),
    **{(convt, bn): _convtranspose_bn for convt, bn in ((nn.ConvTranspose1d, nn.BatchNorm1d),
                                                          (nn.ConvTranspose2d, nn.BatchNorm2d),
                                                          (nn.ConvTranspose3d, nn.BatchNorm3d))},
}


def get_fuser_method(op_list: tuple, additional_fuser_method_mapping: dict | None = None):
    """The function fusing modules of these types, in this order."""
    fuser = {**_FUSERS, **(additional_fuser_method_mapping or {})}.get(op_list)
    if fuser is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser


def fuse_known_modules(mod_list: list, is_qat: bool = False, additional_fuser_method_mapping: dict | None = None):
    """`mod_list` fused: the fused module first, an Identity (in the first module's mode) for each other."""
    types = tuple(type(m) for m in mod_list)
    fuser = get_fuser_method(types, additional_fuser_method_mapping)
    if is_qat:
        raise NotImplementedError("scriptc: fuse_modules_qat (quantization-aware training's fused modules) is not "
                                  "supported; fuse in eval mode")
    fused = fuser(is_qat, *mod_list)
    identities = []
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        identities.append(identity)
    return [fused, *identities]


def fuse_modules(model, modules_to_fuse, inplace: bool = False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict: dict | None = None):
    """`model` (a copy unless `inplace`) with each list of submodule names in `modules_to_fuse` (or the one
    list given) fused: conv+bn, conv+bn+relu, conv+relu, linear+relu, linear+bn, bn+relu,
    convtranspose+bn; in eval mode (the BatchNorm's statistics are folded into the layer)."""
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(name, str) for name in modules_to_fuse):
        modules_to_fuse = [modules_to_fuse]
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    for names in modules_to_fuse:
        modules = [model.get_submodule(name) for name in names]
        for name, module in zip(names, fuser_func(modules, False, additional)):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, module)
    return model
