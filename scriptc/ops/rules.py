"""Shape and dtype rules shared by many ops (broadcasting, reductions, promotion).

A rule receives, per schema argument, a TensorType for tensors, the Python
value for known constants, or `UNKNOWN` for a value only known at run time.
Dims are ints, symbol names (str, e.g. "B") or None (unknown).
"""

from __future__ import annotations

import math
import operator
from typing import Sequence

from scriptc.errors import ShapeError
from scriptc.types import (
    FLOAT,
    Dim,
    TensorType,
    bool_,
    default_float,
    dtype,
    int64,
    result_type,
    scalar_dtype,
)

from . import schema as S


class Unknown:
    """A non-tensor argument whose value is known only at run time (of IR type `type`)."""

    __slots__ = ("type",)

    def __init__(self, type=None):
        self.type = type

    def __repr__(self) -> str:
        return f"Unknown({self.type})"


UNKNOWN = Unknown()


def is_unknown(value) -> bool:
    return isinstance(value, Unknown)


def is_known(value) -> bool:
    """A concrete value: not Unknown, not a symbolic dim, and no Unknown inside a list."""
    if isinstance(value, (Unknown, str)):
        return False
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, Unknown) for v in value)
    return True


_TORCH_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                     "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                     "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def scalar_type_name(d: dtype) -> str:
    """PyTorch's C++ name of a dtype, as its error messages spell it ('Long', 'Float')."""
    return _TORCH_TYPE_NAMES.get(d.name, d.name)


_CPP_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                   "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
                   "complex128": "c10::complex<double>"}


def cpp_type_name(d: dtype) -> str:
    """The C++ element type torch's kernels name in some messages ('float', 'long int')."""
    return _CPP_TYPE_NAMES[d.name]


def legacy_type_name(d: dtype) -> str:
    """The tensor type name torch prints for a CPU tensor of dtype d (`x.type()`: 'torch.FloatTensor')."""
    return f"torch.{scalar_type_name(d)}Tensor"


def fmt_shape(shape) -> str:
    if shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def broadcast_dims(a: Dim, b: Dim, index: int, shapes=None) -> Dim:
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None or b is None:
        return a if b is None and a is not None and a != 1 and not isinstance(a, str) else (
            b if a is None and b is not None and b != 1 and not isinstance(b, str) else None)
    if isinstance(a, str) or isinstance(b, str):
        # A symbol meets a concrete size > 1: the program only runs if they are equal.
        return b if isinstance(a, str) else a
    raise ShapeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
                     f"at non-singleton dimension {index}")


def broadcast_shapes(*shapes: Sequence[Dim] | None) -> tuple[Dim, ...] | None:
    """Broadcast shapes as numpy and PyTorch do; ShapeError naming the dimension if they clash."""
    if any(s is None for s in shapes):
        return None
    out: tuple[Dim, ...] = ()
    for shape in shapes:
        if not out:
            out = tuple(shape)
            continue
        n = max(len(out), len(shape))
        a = (1,) * (n - len(out)) + tuple(out)
        b = (1,) * (n - len(shape)) + tuple(shape)
        # from the last dim, as torch does, so a clash names the dim torch's message names
        out = tuple(reversed([broadcast_dims(a[i], b[i], i) for i in reversed(range(n))]))
    return out


def promote_types(args) -> dtype | None:
    """PyTorch's result dtype over tensor types and Python scalars (None if any dtype unknown)."""
    participants = []
    for a in args:
        if isinstance(a, TensorType):
            if a.dtype is None:
                return None
            rank = a.rank
            participants.append((a.dtype, 1 if rank == 0 else 2))
        elif isinstance(a, (bool, int, float, complex)):
            participants.append((scalar_dtype(a), 0))
        elif is_unknown(a):
            if a.type is not None and a.type.name in ("int", "float", "bool"):
                participants.append((scalar_dtype({"int": 1, "float": 1.0, "bool": True}[a.type.name]), 0))
            else:
                return None
    return result_type(participants) if participants else None


def output_dtype(rule: str | None, compute: dtype | None) -> dtype | None:
    if compute is None:
        return bool_ if rule in (S.COMPARE, S.TO_BOOL) else None
    if rule in (S.COMPARE, S.TO_BOOL):
        return bool_
    if rule == S.PROMOTE_FLOAT and compute.category < FLOAT:
        return default_float()
    return compute


def pointwise(op: S.OpDef):
    """The rule of a pointwise op: broadcast every tensor argument, dtype by `op.dtype_rule`."""
    # (clamp's min and max take part, as in torch: clamp(int_tensor, 0.5) is float)
    participating = [i for i, a in enumerate(op.schema.args) if a.name not in ("alpha", "negative_slope",
                                                                            "approximate")]

    def rule(*args):
        tensors = [a for a in args if isinstance(a, TensorType)]
        shape = broadcast_shapes(*(t.shape for t in tensors))
        compute = promote_types([args[i] for i in participating])
        return TensorType(output_dtype(op.dtype_rule, compute), shape, tensors[0].device if tensors else "cpu")

    return rule


def check_narrow_start(start: int, size: int) -> None:
    """torch's IndexError for a narrow start outside [-size, size]."""
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")


def normalize_dim(dim, rank: int | None, op_name: str = "") -> int:
    """A dim in [-rank, rank) as a non-negative index; IndexError like PyTorch's otherwise."""
    if rank is None or not is_known(dim):
        return dim
    if isinstance(dim, bool) or not isinstance(dim, int):
        if not hasattr(type(dim), "__index__") or hasattr(dim, "shape") and dim.ndim:  # (a numpy integer is one)
            raise TypeError(f"{op_name}(): argument 'dim' must be int, not {type(dim).__name__}")
        dim = operator.index(dim)
    lo, hi = (-1, 0) if rank == 0 else (-rank, rank - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + rank if dim < 0 else dim if rank else 0


def reduced_shape(shape, dims, keepdim: bool, op_name: str = ""):
    """The shape after reducing `dims` (None = all); dims normalized against the rank."""
    if shape is None:
        return None
    rank = len(shape)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        axes = set(range(rank))
    elif not is_known(dims):
        return None
    else:
        dims = [dims] if isinstance(dims, int) else list(dims)
        axes = {normalize_dim(d, rank, op_name) for d in dims}
        if len(axes) != len(dims):
            raise RuntimeError(f"{op_name}(): dim appears multiple times in the list of dims")
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduction(dtype_rule: str | None = S.KEEP, integer_to=int64):
    """Rule for `op(x, dim, keepdim)`; sums of bools/ints give int64 as in PyTorch."""

    def rule(x: TensorType, dim=None, keepdim=False, *rest):
        d = x.dtype
        if d is not None:
            if dtype_rule == S.PROMOTE_FLOAT and d.category < FLOAT:
                d = default_float()
            elif integer_to is not None and d.category < FLOAT:
                d = integer_to
        return TensorType(d, reduced_shape(x.shape, dim, bool(keepdim), ""), x.device)

    return rule


def same_as(index: int = 0):
    def rule(*args):
        return args[index]
    return rule


def numel(shape) -> Dim:
    """The product of the dims: an int, or None if any is not a concrete int."""
    if shape is None or any(not isinstance(d, int) or isinstance(d, bool) for d in shape):
        return None
    return math.prod(shape)


def infer_reshape(shape, sizes, op_name: str = "view"):
    """The output shape of reshape/view: resolves one -1, checks the element count.

    Symbolic dims cancel: [B, 16, 4] viewed as (B, -1) gives [B, 64].
    """
    if is_unknown(sizes):
        return None
    if any(is_unknown(s) for s in sizes):
        return tuple(None if is_unknown(s) or s == -1 else s for s in sizes)
    sizes = list(sizes)
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in sizes:
        if isinstance(s, int) and s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    if shape is None:
        return tuple(None if s == -1 else s for s in sizes)
    have_syms = [d for d in shape if isinstance(d, str)]
    want_syms = [s for s in sizes if isinstance(s, str)]
    if None in shape:
        return tuple(None if s == -1 else s for s in sizes)
    remaining = list(have_syms)
    for s in want_syms:
        if s in remaining:
            remaining.remove(s)
        else:
            return tuple(None if x == -1 else x for x in sizes)
    total = math.prod(d for d in shape if isinstance(d, int))
    known = math.prod(s for s in sizes if isinstance(s, int) and s != -1)
    if -1 in sizes:
        if remaining:
            fill = remaining[0] if len(remaining) == 1 and total == known else None
            return tuple(fill if s == -1 else s for s in sizes)
        if known == 0 or total % known:
            raise ShapeError(f"shape '{list(sizes)}' is invalid for input of size {total}")
        return tuple(total // known if s == -1 else s for s in sizes)
    if not remaining and total != known:
        raise ShapeError(f"shape '{list(sizes)}' is invalid for input of size {total}")
    return tuple(sizes)


def matmul_shape(a, b):
    """torch.matmul's shape rule over 1-d, 2-d and batched operands."""
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(a)}D and {len(b)}D")
    a_vec, b_vec = len(a) == 1, len(b) == 1
    a2 = (1,) + tuple(a) if a_vec else tuple(a)
    b2 = tuple(b) + (1,) if b_vec else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied "
                         f"({'x'.join(map(str, a2[-2:]))} and {'x'.join(map(str, b2[-2:]))})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = tuple(batch) + (a2[-2], b2[-1])
    if a_vec:
        out = out[:-2] + out[-1:]
    if b_vec:
        out = out[:-1]
    return out


def check_per_channel(x, message: str, **per_channel) -> None:
    """Each per-channel tensor (a norm's weight, bias, running stats) against the input's channel
    dim (dim 1), where both sizes are known: otherwise a RuntimeError in torch's words, `message`
    formatted with the tensor's name, channels, size, shape and the input's shape."""
    channels = x.shape[1] if x.shape is not None and len(x.shape) > 1 else None
    if not isinstance(channels, int):
        return
    for name, t in per_channel.items():
        size = t.shape[0] if isinstance(t, TensorType) and t.shape else None
        if isinstance(size, int) and size != channels:
            raise RuntimeError(message.format(name=name, channels=channels, size=size, shape=list(t.shape),
                                              input=list(x.shape)))


def check_conv_channels(x_shape: tuple, w_shape: tuple, groups, spatial: int, transposed: bool = False) -> None:
    """The convolution's input channels against its weight, where both are known (torch's words)."""
    if len(x_shape) <= spatial or not isinstance(groups, int):
        return
    channels = x_shape[-spatial - 1]
    per_group = w_shape[0] if transposed else w_shape[1]
    if not isinstance(channels, int) or not isinstance(per_group, int):
        return
    expected = per_group if transposed else per_group * groups
    if channels != expected:
        given = "transposed=1" if transposed else f"groups={groups}"
        batched = list(x_shape) if len(x_shape) > spatial + 1 else [1, *x_shape]  # (as torch shows an unbatched one)
        raise RuntimeError(f"Given {given}, weight of size {list(w_shape)}, expected input{batched} to have "
                           f"{expected} channels, but got {channels} channels instead")


def conv_out(size: Dim, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool = False) -> Dim:
    if not isinstance(size, int):
        return None
    span = dilation * (kernel - 1) + 1
    numer = size + 2 * padding - span
    if numer < 0:
        return 0 if not ceil_mode else 0
    out = (numer + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def expand(value, n: int, name: str = "padding") -> tuple:
    """An int or a sequence as an n-tuple (torch's _single/_pair/_triple), with torch's error for a
    sequence of another length."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return tuple(value) * n
        if len(value) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                               f"convolution dimensions, but got {name}={list(value)}")
        return tuple(value)
    return (value,) * n
