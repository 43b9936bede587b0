"""bfloat16 as a storage dtype: tensors keep 16-bit patterns; ops compute in float32 and round back.

numpy has no bfloat16, so a bfloat16 array is a 2-byte structured array of the bit patterns
(`scriptc.bfloat16.np`). Shape ops move those patterns as they are (views stay views); every other op
runs on float32 copies, and the outputs its dtype rule says are bfloat16 are rounded back to the
nearest even bfloat16, as PyTorch rounds. `run_kernel` sends every op that meets a bfloat16 array
(or is asked for one by a dtype argument) here.
"""

from __future__ import annotations

from scriptc.types import FLOAT, TensorType, bfloat16, default_float, float32, from_numpy_dtype

from .schema import SHAPE

STORAGE = bfloat16.np
# Whether this process holds bfloat16 arrays yet: until it does, only an op asked for bfloat16 by a
# dtype argument can meet one, and the others skip looking (eager dispatch's fast path). Every
# bfloat16 array is made by from_values or comes in through tensor()/from_numpy, which set it.
SEEN = [False]


def holds(a) -> bool:
    """Whether `a` is an array of bfloat16 patterns."""
    dtype = getattr(a, "dtype", None)
    return dtype is not None and dtype.kind == "V" and dtype == STORAGE


def to_float32(xp, bits):
    """The float32 values of bfloat16 patterns (exact: bfloat16 is float32's upper half)."""
    wide = bits.view(xp.uint16).astype(xp.uint32)
    wide <<= 16  # (in place: a 0-d array stays an array, where `<<` gives a numpy scalar)
    return wide.view(xp.float32)


def from_values(xp, values):
    """bfloat16 patterns of any real values, rounded to nearest even as PyTorch's vectorized CPU
    conversion does (which writes NaN as 0xFFFF)."""
    SEEN[0] = True
    if holds(values):
        return values.copy()
    single = xp.asarray(values).astype(xp.float32)
    word = single.view(xp.uint32)
    rounded = ((word + (((word >> 16) & 1) + 0x7FFF)) >> 16).astype(xp.uint16)
    return xp.where(single != single, xp.uint16(0xFFFF), rounded).astype(xp.uint16).view(STORAGE)


def default_float_compute(xp):
    """The numpy dtype integers compute in on their way to the default float dtype (float32 for a
    bfloat16 default: store the result with `as_default_float`)."""
    floating = default_float()
    return xp.dtype(xp.float32) if floating is bfloat16 else floating.np


def as_default_float(xp, values):
    """Values computed in `default_float_compute`'s dtype, as the default float dtype."""
    return from_values(xp, values) if default_float() is bfloat16 else values


def cast(xp, a, np_dtype):
    """a converted to np_dtype, through float32 where either side is bfloat16."""
    if holds(a):
        a = to_float32(xp, a)
    if np_dtype == STORAGE:
        return from_values(xp, a)
    return a.astype(np_dtype)


def involved(op, xp, arrays) -> bool:
    """Whether an op call meets bfloat16: a dtype argument asking for it, or an array of it."""
    for i in op.dtype_args:
        if arrays[i] is bfloat16:
            return True
    if not SEEN[0]:
        return False
    array_type = xp.ndarray
    for i in op.array_args:
        a = arrays[i]
        if type(a) is array_type and a.dtype.kind == "V" and a.dtype == STORAGE:
            return True
    for i in op.tensor_list_args:
        items = arrays[i]
        if type(items) in (list, tuple) and any(holds(t) for t in items):
            return True
    return False


def _widen(xp, a):
    if a is bfloat16:
        return float32
    if holds(a):
        return to_float32(xp, a)
    if type(a) in (list, tuple):
        return type(a)(_widen(xp, item) for item in a)
    return a


def _result_dtypes(op, arrays):
    """The dtype of each output by the op's own shape/dtype rule (None where it cannot say)."""
    def meta(a):
        if hasattr(a, "dtype") and hasattr(a, "shape") and not isinstance(a, type):
            return TensorType(from_numpy_dtype(a.dtype), tuple(a.shape))
        if type(a) in (list, tuple):
            return [meta(item) for item in a]
        return a
    try:
        result = op.shape(*[meta(a) for a in arrays])
    except Exception:  # a rule that cannot judge these arguments: the outputs keep float32
        return ()
    return tuple(getattr(r, "dtype", None) for r in (result if isinstance(result, tuple) else (result,)))


def _only_bfloat16(op, arrays) -> bool:
    """No dtype argument asks for bfloat16, and every tensor argument that is not an index is bfloat16."""
    if any(a is bfloat16 for a in arrays):
        return False
    values = [arrays[i] for i in set(op.promote_args) | set(op.tensor_args)]
    values += [t for i in op.tensor_list_args if type(arrays[i]) in (list, tuple) for t in arrays[i]]
    return all(v is None or holds(v) or getattr(getattr(v, "dtype", None), "kind", "f") in "iub" for v in values)


# scripted code's reads of a tensor's dtype and element size, which float32 copies would misreport
_READS_METADATA = frozenset({"dtype", "element_size.tensor", "nbytes.tensor"})


def run(op, xp, arrays, run_kernel):
    """Run `op` on arguments that involve bfloat16 (run_kernel(op, xp, arrays) runs it otherwise)."""
    if (op.kind == SHAPE and _only_bfloat16(op, arrays)) or op.name in _READS_METADATA:
        # Data movement among bfloat16 arrays only (views stay views), or a read of the dtype or
        # element size: the patterns as they are.
        return run_kernel(op, xp, list(arrays))
    out = run_kernel(op, xp, [_widen(xp, a) for a in arrays])
    dtypes = _result_dtypes(op, arrays)
    aux = None
    if op.aux:
        out, aux = out
    several = isinstance(out, (tuple, list))
    outs = list(out) if several else [out]
    for i, o in enumerate(outs):
        if i >= len(dtypes) or getattr(o, "dtype", None) is None or o.dtype.kind != "f":
            continue
        if dtypes[i] is bfloat16:
            outs[i] = from_values(xp, o)
        elif dtypes[i] is not None and dtypes[i].category == FLOAT and o.dtype != dtypes[i].np:
            # computed in float32 for a float16 (or float64) result: a float16 tensor meets a bfloat16 0-d one
            outs[i] = o.astype(dtypes[i].np)
    out = type(out)(outs) if several else outs[0]
    return (out, aux) if op.aux else out


def widen_saved(xp, values):
    """A gradient formula's saved arrays with bfloat16 ones as float32 (formulas compute in float)."""
    return [_widen(xp, a) for a in values]
