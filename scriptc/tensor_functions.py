"""torch functions that are not ops of the table: the function forms of Tensor methods (torch.detach,
torch.is_nonzero ...), the `*_copy` forms of the view ops, legacy and conversion constructors (asarray,
range, scalar_tensor, empty_strided, empty_permuted), typename, nonzero_static, cond, and unravel_index
(built from floor division and remainder, so it traces)."""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from scriptc.ops.rules import scalar_type_name
from scriptc.tensors import Tensor, as_tensor, tensor
from scriptc.tensors.conversion import check_device_arg
from scriptc.types import dtype as _dtype
from scriptc.types import default_float

__all__ = ["detach", "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_conj", "resolve_conj",
           "resolve_neg", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "split_with_sizes", "asarray",
           "range", "scalar_tensor", "empty_strided", "empty_permuted", "typename", "nonzero_static", "cond",
           "unravel_index"] + [name + "_copy" for name in ("alias", "as_strided", "detach", "diagonal", "expand",
                                                           "permute", "select", "slice", "split", "split_with_sizes",
                                                           "squeeze", "t", "transpose", "unbind", "unfold",
                                                           "unsqueeze", "view", "view_as_real", "view_as_complex")]


def detach(input: Tensor) -> Tensor:
    return input.detach()


def is_nonzero(input: Tensor) -> bool:
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    return input.is_inference()


def is_conj(input: Tensor) -> bool:
    return input.is_conj()


def resolve_conj(input: Tensor) -> Tensor:
    return input.resolve_conj()


def resolve_neg(input: Tensor) -> Tensor:
    return input.resolve_neg()


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    return input.chunk(chunks, dim)


def unsafe_split(input: Tensor, split_size, dim: int = 0) -> tuple:
    return input.split(split_size, dim)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    return input.split_with_sizes(split_sizes, dim)


unsafe_split_with_sizes = split_with_sizes


def _copy_of(view_name: str):
    """torch.<view>_copy: the view op's result in fresh memory (each piece, for the ops that split)."""
    def copy(input: Tensor, *args, **kwargs):
        out = _view_forms()[view_name](input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(piece.clone() for piece in out)
        return out.clone()
    copy.__name__ = copy.__qualname__ = view_name + "_copy"
    copy.__doc__ = f"torch.{view_name}_copy: like {view_name}, but the result does not share input's memory."
    return copy


def _view_forms() -> dict:
    return {"alias": lambda x: x, "as_strided": Tensor.as_strided, "detach": Tensor.detach,
            "diagonal": Tensor.diagonal, "expand": lambda x, size, *, implicit=False: x.expand(size),
            "permute": Tensor.permute, "select": Tensor.select, "slice": _slice, "split": Tensor.split,
            "split_with_sizes": Tensor.split_with_sizes, "squeeze": Tensor.squeeze, "t": Tensor.t,
            "transpose": Tensor.transpose, "unbind": Tensor.unbind, "unfold": Tensor.unfold,
            "unsqueeze": Tensor.unsqueeze, "view": Tensor.view, "view_as_real": lambda x: x.view_as_real(),
            "view_as_complex": lambda x: x.view_as_complex()}


def _slice(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    return input[(slice(None),) * (dim % input.dim()) + (slice(start, end, step),)]


for _view in ("alias", "as_strided", "detach", "diagonal", "expand", "permute", "select", "slice", "split",
              "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view",
              "view_as_real", "view_as_complex"):
    globals()[_view + "_copy"] = _copy_of(_view)


def asarray(obj, *, dtype: _dtype | None = None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """A tensor from obj that shares its memory where it can: a tensor (or numpy array) of the wanted
    dtype is aliased, not copied, unless copy=True; copy=False refuses to copy."""
    check_device_arg(device)
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtype != obj.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{scalar_type_name(obj.dtype)}' into dtype "
                                 f"'{scalar_type_name(dtype)}'.")
            out = obj.to(dtype)
        elif copy:
            out = obj.clone()
    elif isinstance(obj, np.ndarray) and not copy:
        out = as_tensor(obj, dtype=dtype)
    else:
        out = tensor(obj, dtype=dtype)
    if requires_grad:
        out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
    return out


def range(start=0, end=None, step=1, *, dtype: _dtype | None = None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Deprecated torch.range: the values start, start + step, ... up to and including end."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    check_device_arg(device)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    count = int(np.floor((end - start) / step)) + 1
    if count < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    values = start + step * np.arange(count, dtype=np.float64)
    out = tensor(values, dtype=dtype or default_float())
    return out.requires_grad_(True) if requires_grad else out


def scalar_tensor(s, *, dtype: _dtype | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding s, of the default dtype (float32) unless dtype says otherwise (also for an int)."""
    check_device_arg(device)
    out = tensor(s, dtype=dtype or default_float())
    return out.requires_grad_(True) if requires_grad else out


scalar_tensor._scriptc_op = "scalar_tensor"  # (jit.script calls the op)


def empty_strided(size, stride, *, dtype: _dtype | None = None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with these sizes and strides (in elements)."""
    import scriptc

    check_device_arg(device)
    size, stride = tuple(size), tuple(stride)
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    out = scriptc.empty(extent, dtype=dtype).as_strided(size, stride)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype: _dtype | None = None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` laid out in memory in the dim order physical_layout
    (outermost first): empty_permuted((N, C, H, W), (0, 2, 3, 1)) is channels-last."""
    import scriptc

    check_device_arg(device)
    order = tuple(physical_layout)
    dims = builtins.range(len(size))  # `range` here is torch.range
    if sorted(order) != list(dims):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    physical = scriptc.empty([size[d] for d in order], dtype=dtype)
    out = physical.permute([order.index(d) for d in dims])
    return out.requires_grad_(True) if requires_grad else out


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero(input) with exactly `size` rows: cut, or padded with fill_value."""
    import scriptc

    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    found = input.nonzero()
    if found.size(0) >= size:
        return found[:size]
    padding = scriptc.full((size - found.size(0), input.dim()), fill_value, dtype=found.dtype)
    return scriptc.cat([found, padding])


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred (a bool or one-element tensor) else false_fn(*operands)."""
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    return (true_fn if bool(pred) else false_fn)(*operands)


# torch's modules for the classes scriptc defines somewhere torch's path does not mirror
_TORCH_HOMES = {"Generator": "torch._C", "TypedStorage": "torch.storage", "UntypedStorage": "torch.storage",
                "layout": "torch", "MultiheadAttention": "torch.nn.modules.activation",
                "no_grad": "torch.autograd.grad_mode", "enable_grad": "torch.autograd.grad_mode",
                "set_grad_enabled": "torch.autograd.grad_mode", "inference_mode": "torch.autograd.grad_mode"}
# scriptc packages whose files torch keeps as one module
_ONE_MODULE_IN_TORCH = ("scriptc.optim.lr_scheduler",)
# scriptc.nn's own submodules; the other scriptc.nn.<file> hold modules torch keeps in torch.nn.modules.<file>
_NN_PACKAGES = {"parameter", "functional", "init", "utils", "modules", "attention"}


def _torch_module(module: str, cls) -> str:
    """The module torch.typename names for a class of scriptc's: torch's path to the same class."""
    if module != "scriptc" and not module.startswith("scriptc."):
        return module
    if cls.__name__ in _TORCH_HOMES:
        return _TORCH_HOMES[cls.__name__]
    import scriptc
    if getattr(scriptc, cls.__name__, None) is cls:
        return "torch"
    for package in _ONE_MODULE_IN_TORCH:
        if module.startswith(package + "."):
            return "torch" + package[len("scriptc"):]
    parts = module.split(".")
    if parts[1:2] == ["nn"] and len(parts) == 3 and parts[2] not in _NN_PACKAGES:
        return f"torch.nn.modules.{parts[2]}"
    return "torch" + module[len("scriptc"):]


def typename(obj) -> str:
    """A tensor's legacy type name (torch.FloatTensor), else the dotted name of obj or its class, by
    torch's path for scriptc's own classes (torch.dtype, torch.nn.modules.linear.Linear)."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    module = _torch_module(module, cls)
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates, one tensor per dim of shape, of flat row-major indices (wrapping modulo the
    number of elements, negative ones from the end)."""
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype.name == "bool":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    sizes = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in sizes):
        raise ValueError(f"'shape' cannot have negative values, but got {sizes}")
    coordinates = []
    rest = indices
    for size in reversed(sizes):
        coordinates.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(coordinates))

