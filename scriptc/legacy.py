"""The legacy typed constructors, torch.FloatTensor, torch.LongTensor, ... (as old model code calls them).

`FloatTensor(data)` is `tensor(data, dtype=float32)`; `FloatTensor(2, 3)` (or a Size) an
uninitialized 2x3 tensor; `FloatTensor()` an empty one. `isinstance(t, FloatTensor)` checks
the dtype, as in torch.
"""

from __future__ import annotations

from scriptc import types as T

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor"]


class _LegacyTensorType(type):
    """The type of the legacy constructors: isinstance(t, FloatTensor) is `t.dtype == float32`."""

    def __instancecheck__(cls, obj) -> bool:
        from scriptc.tensors import Tensor
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _construct(cls, *args, device=None):
    from scriptc import ops
    from scriptc.tensors import Size, Tensor, call, check_device_arg, tensor

    check_device_arg(device)
    if device is not None and T.device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {T.device(device).type} "
                           "was passed")
    sizes = args[0] if len(args) == 1 and isinstance(args[0], Size) else args
    if not args:
        sizes = (0,)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in sizes):
        return call(ops.OPS["empty"], (list(sizes), cls.dtype, None, None))
    if len(args) != 1:
        raise TypeError(f"{cls.__name__}() takes sizes as ints or one sequence of data")
    data = args[0]
    if isinstance(data, Tensor) and data.dtype is not cls.dtype:
        raise TypeError(f"expected {cls.dtype!r} (got {data.dtype!r})")
    return tensor(data, dtype=cls.dtype)


def _legacy(name: str, dtype: T.dtype) -> type:
    return _LegacyTensorType(name, (), {"dtype": dtype, "__new__": _construct, "__module__": "scriptc",
                                        "__doc__": f"Legacy constructor of {dtype!r} tensors."})


FloatTensor = _legacy("FloatTensor", T.float32)
DoubleTensor = _legacy("DoubleTensor", T.float64)
HalfTensor = _legacy("HalfTensor", T.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", T.bfloat16)
LongTensor = _legacy("LongTensor", T.int64)
IntTensor = _legacy("IntTensor", T.int32)
ShortTensor = _legacy("ShortTensor", T.int16)
CharTensor = _legacy("CharTensor", T.int8)
ByteTensor = _legacy("ByteTensor", T.uint8)
BoolTensor = _legacy("BoolTensor", T.bool_)
BY_NAME = {cls.__name__: cls for cls in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor,
                                         ShortTensor, CharTensor, ByteTensor, BoolTensor)}
