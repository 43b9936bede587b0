"""Tensor: a numpy array with PyTorch's dtype rules, views, version counters and autograd.

Every op reaches its kernel through `call(op, args)`, one lookup in the op
table: cast to the promoted dtype, run the kernel, wrap the result, record
a Node for autograd when an input requires grad, and tell the tracer.
"""

from __future__ import annotations

import math

import numpy as np

from scriptc import autograd, grad_mode
from scriptc import ops as _ops
from scriptc.errors import ShapeError
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops import subscript as indexing
from scriptc.ops import rules as _rules
from scriptc.ops.execute import run_kernel
from scriptc.types import (
    CPU,
    channels_last,
    channels_last_3d,
    Bool,
    Float,
    Int,
    DEFAULT_COMPLEX,
    DEFAULT_FLOAT,
    bfloat16,
    bool_,
    complex64,
    complex128,
    device,
    dtype,
    float16,
    float32,
    float64,
    from_numpy_dtype,
    int32,
    int64,
    scalar_dtype,
)

__all__ = ["Tensor", "Size", "tensor", "from_numpy", "as_tensor", "wrap", "call", "dtype", "device"]

_mode = autograd._mode
# numpy dtype kinds that carry gradients: float, complex, and "V", bfloat16's structured patterns.
_DIFFERENTIABLE_KINDS = "fcV"
# The active tracer (scriptc.jit.trace sets it); a list so the hot path reads one global.
_tracer: list = [None]


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as `scriptc.Size([2, 3])`."""

    def __repr__(self) -> str:
        return f"scriptc.Size({list(self)})"

    def numel(self) -> int:
        return math.prod(self)


def _complex_part(op_name: str, doc: str) -> property:
    """The `real` / `imag` attribute: reading gives the view the op makes, assigning writes through it."""
    def read(self):
        return call(_ops.OPS[op_name], (self,))

    def write(self, value) -> None:
        read(self).copy_(value)
    return property(read, write, doc=doc)


class Tensor:
    """An n-dimensional array with autograd, backed by a numpy array (`scriptc.tensor([...])`)."""

    __slots__ = ("_data", "requires_grad", "grad", "grad_fn", "_out_index", "_vc", "_base", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, *args):
        if len(args) == 1 and not isinstance(args[0], int):
            data = np.asarray(args[0], dtype=np.float32)
        else:
            data = np.empty(tuple(args), dtype=np.float32)
        _init(self, data)

    # --- basic properties ------------------------------------------------------
    @property
    def shape(self) -> Size:
        tracer = _tracer[0]
        if tracer is not None:
            return tracer.traced_size(self)
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dim (negative dims count from the end)."""
        if dim is None:
            return self.shape
        d = _rules.normalize_dim(dim, self._data.ndim, "size")
        tracer = _tracer[0]
        if tracer is not None:
            return tracer.traced_size(self)[d]
        return self._data.shape[d]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    @property
    def dtype(self) -> dtype:
        return from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_xpu(self) -> bool:
        """Always False: scriptc tensors live on the CPU (models test it to pick a multi-device path)."""
        return False

    @property
    def is_mps(self) -> bool:
        return False

    @property
    def is_meta(self) -> bool:
        return False

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def data(self) -> "Tensor":
        return _detached_alias(self)

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data
        self._vc = value._vc

    @property
    def T(self) -> "Tensor":
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self) -> "Tensor":
        return self.transpose(-2, -1)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or _bfloat16.holds(self._data)

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_conj(self) -> bool:
        """False: conj() makes a conjugated copy here, never a lazily conjugated view."""
        return False

    def resolve_conj(self) -> "Tensor":
        return self

    def resolve_neg(self) -> "Tensor":
        return self

    real = _complex_part("real", "The real part, a view (a real tensor's real part is itself).")
    imag = _complex_part("imag", "The imaginary part of a complex tensor, a view.")

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements are laid out in row-major order (or in memory_format's order)."""
        if memory_format in (channels_last, channels_last_3d):
            rank = 4 if memory_format == channels_last else 5
            if self._data.ndim != rank:
                return False
            order = (0,) + tuple(range(2, rank)) + (1,)
            return bool(self._data.transpose(order).flags.c_contiguous)
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_rules.normalize_dim(dim, self._data.ndim, "stride")]

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def data_ptr(self) -> int:
        return self._data.ctypes.data

    def __hash__(self) -> int:
        return id(self)

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: say whether torch has the name (not a guess at another).
        from scriptc.torch_names import missing
        raise missing("torch.Tensor", f"'{type(self).__name__}' object", name, dir(type(self)))

    # --- conversion to Python / numpy --------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array sharing memory (no copy)."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _no_bfloat16_array(self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        data = self._data
        _no_bfloat16_array(data)
        if dtype is not None and np.dtype(dtype) != data.dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if _tracer[0] is not None:
            _tracer[0].data_dependent("item()")
        return _values(self._data).reshape(()).item()

    def tolist(self):
        return _values(self._data).tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        if _tracer[0] is not None:
            _tracer[0].data_dependent("a tensor used as a Python bool")
        return bool(self._data.reshape(()))

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # --- autograd ----------------------------------------------------------------
    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (gradient= for non-scalars)."""
        autograd.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> "Tensor":
        """The same data, cut from the autograd graph."""
        out = _detached_alias(self)
        if _tracer[0] is not None:
            _tracer[0].alias(self, out)
        return out

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind not in _DIFFERENTIABLE_KINDS:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def is_inference(self) -> bool:
        """Whether this tensor was made under `inference_mode`."""
        return grad_mode.is_inference(self)

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward."""
        import weakref

        if self.grad_fn is None:
            return
        if self.grad_fn.retained is None:
            self.grad_fn.retained = {}
        self.grad_fn.retained[self._out_index] = weakref.ref(self)

    # --- dtype and device conversion -----------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        """`to(dtype)`, `to(device)`, `to(device, dtype)` or `to(other)`; returns self when nothing changes."""
        target_dtype, target_device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, dtype):
                target_dtype = a
            elif isinstance(a, (str, device)):
                target_device = device(a)
            elif isinstance(a, Tensor):
                target_dtype, target_device = a.dtype, a.device
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
        if target_device is not None:
            _check_device(device(target_device))
        if target_dtype is None or target_dtype.np == self._data.dtype:
            return self.clone() if copy else self
        return call(_TO_DTYPE, (self, target_dtype))

    def type(self, dtype_: dtype | None = None):
        """The legacy type name ('scriptc.FloatTensor'), or a copy converted to a dtype, a legacy type
        (scriptc.LongTensor) or a legacy type's name."""
        from scriptc.legacy import BY_NAME

        if isinstance(dtype_, str):
            dtype_ = BY_NAME.get(dtype_.rpartition(".")[2], dtype_)
        if isinstance(dtype_, type) and isinstance(getattr(dtype_, "dtype", None), dtype):
            dtype_ = dtype_.dtype
        if dtype_ is None:
            return {"float32": "scriptc.FloatTensor", "float64": "scriptc.DoubleTensor",
                    "float16": "scriptc.HalfTensor", "int64": "scriptc.LongTensor", "int32": "scriptc.IntTensor",
                    "bool": "scriptc.BoolTensor"}.get(self.dtype.name, "scriptc.Tensor")
        return self.to(dtype_)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def float(self) -> "Tensor":
        return self.to(float32)

    def double(self) -> "Tensor":
        return self.to(float64)

    def half(self) -> "Tensor":
        return self.to(float16)

    def bfloat16(self) -> "Tensor":
        return self.to(bfloat16)

    def cfloat(self) -> "Tensor":
        return self.to(complex64)

    def cdouble(self) -> "Tensor":
        return self.to(complex128)

    def long(self) -> "Tensor":
        return self.to(int64)

    def int(self) -> "Tensor":
        return self.to(int32)

    def bool(self) -> "Tensor":
        return self.to(bool_)

    def cpu(self) -> "Tensor":
        return self

    def cuda(self, device_=None, non_blocking: bool = False) -> "Tensor":
        _check_device(device("cuda"))
        return self

    def share_memory_(self) -> "Tensor":
        """Move this tensor's storage into shared memory, in place (views follow); a no-op when it is
        there already. A shared tensor sent to another process arrives as a view of the same memory."""
        from scriptc.multiprocessing.shared_memory import move_to_shared_memory
        move_to_shared_memory([self])
        return self

    def is_shared(self) -> bool:
        """Whether this tensor's storage is in shared memory."""
        from scriptc.multiprocessing.shared_memory import shared_storage
        return shared_storage(self._data) is not None

    def pin_memory(self) -> "Tensor":
        _check_device(device("cuda"))
        return self

    # --- layout (a sparse COO tensor is a scriptc.sparse.SparseTensor) -------------------
    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def layout(self):
        from scriptc.sparse import strided
        return strided

    def to_dense(self, dtype: dtype | None = None, *, masked_grad=None) -> "Tensor":
        return self if dtype is None else self.to(dtype)

    def to_sparse(self, sparse_dim: int | None = None) -> "Tensor":
        """The nonzero elements as a sparse COO tensor (see scriptc.sparse)."""
        from scriptc.sparse import to_sparse
        return to_sparse(self, sparse_dim)

    def indices(self) -> "Tensor":
        raise RuntimeError("indices expected sparse coordinate tensor layout but got Strided")

    def values(self) -> "Tensor":
        raise RuntimeError("values expected sparse tensor layout but got Strided")

    def coalesce(self) -> "Tensor":
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got Strided")

    # --- shape helpers that are compositions of table ops --------------------------
    def contiguous(self, memory_format=None) -> "Tensor":
        """self when already contiguous (as PyTorch), else a contiguous copy."""
        if self._data.flags.c_contiguous:
            return self
        return call(_ops.OPS["contiguous"], (self,))

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other.shape)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    # --- in-place initialisers (used by nn.init) -------------------------------------
    def zero_(self) -> "Tensor":
        return self.fill_(0)

    def fill_(self, value) -> "Tensor":
        return call_inplace(_COPY.inplace, (self, value))

    def copy_(self, src, non_blocking: bool = False) -> "Tensor":
        return call_inplace(_COPY.inplace, (self, src))

    # --- new_* keep this tensor's dtype and device ------------------------------------
    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        if dtype is not None:
            return _fresh(call(_ops.OPS["zeros"], (_size_arg(size), dtype, None)), requires_grad)
        return _fresh(call(_ops.OPS["new_zeros"], (self, _size_arg(size))), requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        if dtype is not None:
            return _fresh(call(_ops.OPS["ones"], (_size_arg(size), dtype, None)), requires_grad)
        return _fresh(call(_ops.OPS["new_ones"], (self, _size_arg(size))), requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["empty"], (_size_arg(size), dtype or self.dtype, None)), requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["full"], (_size_arg((size,)), fill_value, dtype or self.dtype, None)),
                      requires_grad)

    # --- indexing ------------------------------------------------------------------------
    def __getitem__(self, index) -> "Tensor":
        return _getitem(self, index)

    def __setitem__(self, index, value) -> None:
        _setitem(self, index, value)

    # --- printing -----------------------------------------------------------------------
    def __repr__(self) -> str:
        return _tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._data.copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        out = _fresh(wrap(self._data.copy()), self.requires_grad)
        if type(self) is not Tensor:
            out = type(self)(out, requires_grad=self.requires_grad)
        memo[id(self)] = out
        return out


def _values(data: np.ndarray) -> np.ndarray:
    """The array itself, or a bfloat16 array's float32 values."""
    return _bfloat16.to_float32(np, data) if _bfloat16.holds(data) else data


def _no_bfloat16_array(data: np.ndarray) -> None:
    if _bfloat16.holds(data):
        raise TypeError("Got unsupported ScalarType BFloat16")


def _rebuild(data, requires_grad):
    return _fresh(wrap(data), requires_grad)


def _init(t: Tensor, data: np.ndarray) -> None:
    t._data = data
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._out_index = 0
    t._vc = [0]
    t._base = None


def wrap(data) -> Tensor:
    """A Tensor around an array (no copy); numpy scalars become 0-d arrays."""
    if type(data) is not np.ndarray:
        data = np.asarray(data)
    t = object.__new__(Tensor)
    t._data = data
    t.requires_grad = False
    t.grad = None
    t.grad_fn = None
    t._out_index = 0
    t._vc = [0]
    t._base = None
    return t


def _view_of(src: Tensor, data) -> Tensor:
    """A Tensor over `data`, which aliases src's storage: it shares src's version counter."""
    t = wrap(data)
    t._vc = src._vc
    t._base = src._base if src._base is not None else src
    return t


def _detached_alias(src: Tensor) -> Tensor:
    """src's storage and version counter without its history (detach(), .data): an in-place op
    on it records nothing into src's graph."""
    t = wrap(src._data)
    t._vc = src._vc
    return t


def _fresh(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size_arg(size) -> list:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return list(size[0])
    return list(size)


def _check_device(dev: device) -> None:
    if dev.type == "cuda":
        from scriptc import cuda
        cuda.require()


def check_device_arg(value, pin_memory: bool = False) -> None:
    """A factory's `device=` / `pin_memory=` must be usable here: CUDA without cupy or a GPU raises
    the RuntimeError that says why (as `.to("cuda")` does) instead of handing back a CPU tensor.
    An int means that CUDA device, as in PyTorch."""
    if value is not None:
        _check_device(device("cuda", value) if isinstance(value, int) and not isinstance(value, bool) else device(value))
    if pin_memory:
        _check_device(device("cuda"))  # pinned host memory only serves copies to a GPU


# --- dispatch ---------------------------------------------------------------------------

def _unwrap(op, args):
    """Arrays in place of Tensors (also inside lists); whether any input requires grad."""
    arrays = list(args)
    needs_grad = False
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            arrays[i] = a._data
            if a.requires_grad:
                needs_grad = True
    for i in op.tensor_list_args:
        items = args[i]
        if type(items) in (list, tuple):
            arrays[i] = [t._data if isinstance(t, Tensor) else t for t in items]
            if any(isinstance(t, Tensor) and t.requires_grad for t in items):
                needs_grad = True
    return arrays, needs_grad


def call(op, args: tuple):
    """Run one op-table op eagerly on bound arguments (schema order); the only path to a kernel."""
    arrays, needs_grad = _unwrap(op, args)
    out = run_kernel(op, np, arrays)
    aux = None
    if op.aux:
        out, aux = out
    record = needs_grad and op.grad is not None and _mode.enabled
    if type(out) is np.ndarray:
        result = _wrap_output(op, out, args) if op.view else wrap(out)
        outs = (result,)
    elif isinstance(out, (tuple, list)):
        outs = tuple(_wrap_output(op, o, args) for o in out)
        result = op.result_tuple(*outs) if op.result_tuple is not None else (
            list(outs) if type(out) is list or op.schema.returns[0].__class__.__name__ == "ListType" else outs)
    elif isinstance(out, (bool, int, float)) and op.schema.returns[0] in _PYTHON_RESULTS:
        if _tracer[0] is not None:
            _tracer[0].data_dependent(f"the result of {op.base_name}()")
        return out
    else:
        result = _wrap_output(op, np.asarray(out), args)
        outs = (result,)
    if record:
        node = autograd.record(op, arrays, _grad_inputs(op, args), out, aux, np)
        for i, t in enumerate(outs):
            if t._data.dtype.kind in _DIFFERENTIABLE_KINDS and i not in op.nondifferentiable_outputs:
                t.requires_grad = True
                t.grad_fn = node
                t._out_index = i
        if "out" in op.save:
            autograd.watch_output(node, outs[0])
    elif _mode.inference:
        grad_mode.mark_inference(outs)
    if _tracer[0] is not None:
        _tracer[0].record(op, args, outs)
    if op.python_result is not None:
        return op.python_result(args, outs)
    return result


# Ops whose schema returns one of these give the Python value (torch.equal, allclose).
_PYTHON_RESULTS = (Bool, Int, Float)


def _grad_inputs(op, args):
    """Per argument: the Tensor, the list of Tensors, or None, for the autograd Node."""
    inputs = [a if isinstance(a, Tensor) else None for a in args]
    for i in op.tensor_list_args:
        if type(args[i]) in (list, tuple):
            inputs[i] = [t if isinstance(t, Tensor) else None for t in args[i]]
    return inputs


def _root(array: np.ndarray):
    """The object that owns an array's memory, following `.base` (also through the non-array holder
    numpy's as_strided puts between a strided view and its source)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _wrap_output(op, out, args) -> Tensor:
    if op.view:
        src = args[0]
        if isinstance(src, Tensor):
            data = src._data
            base = out.base
            if base is not None and (base is data or base is data.base or _root(out) is _root(data)):
                return _view_of(src, out)
    return wrap(out)


def _check_inplace_allowed(target: Tensor, other_args) -> None:
    if not _mode.inference and grad_mode.is_inference(target):
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if _mode.enabled and target.requires_grad and target.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = target._base
    if _mode.enabled and base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if not target._data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def call_inplace(op, args: tuple) -> Tensor:
    """Run the pure op `op.inplace_of` and write its result into args[0] (PyTorch's `add_`)."""
    target = args[0]
    pure = op.inplace_of
    grad_flow = _mode.enabled and any(
        isinstance(a, Tensor) and a.requires_grad for a in args) and pure.grad is not None
    _check_inplace_allowed(target, args[1:])
    if op.inplace_check is not None:
        op.inplace_check(target._data)
    tracer = _tracer[0]
    _tracer[0] = None
    try:
        if grad_flow:
            # The pure op sees the old value: a copy when its gradient formula reads it, since the
            # write below overwrites target's storage.
            old = wrap(target._data.copy() if "self" in pure.save else target._data)
            old.requires_grad, old.grad_fn, old._out_index = target.requires_grad, target.grad_fn, target._out_index
            result = call(pure, (old,) + tuple(args[1:]))
        else:
            with autograd.no_grad():
                result = call(pure, args)
    finally:
        _tracer[0] = tracer
    out = result._data
    if out.dtype != target._data.dtype and (_bfloat16.holds(out) or _bfloat16.holds(target._data)):
        out = _bfloat16.cast(np, out, target._data.dtype)
    if out.dtype != target._data.dtype and not np.can_cast(out.dtype, target._data.dtype, "same_kind"):
        raise RuntimeError(f"result type {from_numpy_dtype(out.dtype).name.capitalize()} can't be cast to the "
                           f"desired output type {target.dtype.name.capitalize()}")
    if out.shape != target._data.shape:
        raise ShapeError(f"output with shape {list(target._data.shape)} doesn't match the broadcast shape "
                         f"{list(out.shape)}")
    np.copyto(target._data, out, casting="unsafe")
    target._vc[0] += 1
    if grad_flow:
        if target._base is not None:
            _rebase_history(target._base, target, result)
        target.requires_grad = True
        target.grad_fn = result.grad_fn
        target._out_index = 0
        if "out" in pure.save:
            # The formula reads the output, which now lives in target's storage.
            target.grad_fn.versions[-1] = ("output 0", target._vc, target._vc[0], None)
    if tracer is not None:
        tracer.record_inplace(op, args, target)
    return target


def _rebase_history(base: Tensor, view: Tensor, result: Tensor) -> None:
    """An in-place op wrote `result` through `view` into `base`'s storage: from now on base's value
    is index_put(old base, view's positions in base, result), and that is its history, so gradient
    reaches both what base was and what was written (PyTorch's CopySlices)."""
    old = wrap(base._data)
    old.requires_grad, old.grad_fn, old._out_index = base.requires_grad, base.grad_fn, base._out_index
    positions = [wrap(p) for p in _view_positions(base._data, view._data)]
    written = call(_INDEX_PUT, (old, positions, result, False))
    base.requires_grad = True
    base.grad_fn = written.grad_fn
    base._out_index = 0


def _view_positions(base: np.ndarray, view: np.ndarray) -> tuple:
    """Per element of `view`, which lies in `base`'s memory, its index in `base` (one array per dim)."""
    if view.itemsize != base.itemsize:
        raise RuntimeError("an in-place operation on a view with another dtype than its base cannot record "
                           "gradient in scriptc")
    step = base.itemsize
    low, high = np.lib.array_utils.byte_bounds(base)
    shadow = np.full((high - low) // step, -1, dtype=np.intp)

    def laid_over(a: np.ndarray) -> np.ndarray:
        start = (a.__array_interface__["data"][0] - low) // step
        strides = tuple(s // step * shadow.itemsize for s in a.strides)
        return np.lib.stride_tricks.as_strided(shadow[start:], a.shape, strides)

    laid_over(base)[...] = np.arange(base.size).reshape(base.shape)
    return np.unravel_index(laid_over(view).copy(), base.shape)


# --- tensor creation -------------------------------------------------------------------

def _infer_dtype(data) -> dtype:
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.ndarray):
        return from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple)):
        kinds = set()
        _scan_kinds(data, kinds)
        if complex in kinds:
            return DEFAULT_COMPLEX
        if float in kinds:
            return DEFAULT_FLOAT
        if int in kinds:
            return int64
        if bool in kinds:
            return bool_
        return DEFAULT_FLOAT
    return scalar_dtype(data)


def _scan_kinds(data, kinds: set) -> None:
    for item in data:
        if isinstance(item, (list, tuple)):
            _scan_kinds(item, kinds)
        elif isinstance(item, Tensor):
            kinds.add({"f": float, "c": complex, "b": bool}.get(item._data.dtype.kind, int))
        elif isinstance(item, bool) or (isinstance(item, np.generic) and item.dtype.kind == "b"):
            kinds.add(bool)
        elif isinstance(item, (int, np.integer)):
            kinds.add(int)
        elif isinstance(item, (float, np.floating)):
            kinds.add(float)
        elif isinstance(item, (complex, np.complexfloating)):
            kinds.add(complex)
        else:
            raise TypeError(f"Could not infer dtype of {type(item).__name__}")


def tensor(data, dtype: dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copied from data (nested lists, numbers, numpy arrays or tensors).

    dtype follows PyTorch: ints give int64, floats float32, bools bool, numpy arrays keep theirs.
    """
    if device is not None:
        _check_device(globals()["device"](device))
    if isinstance(data, Tensor):
        array = data._data
    elif isinstance(data, (list, tuple)):
        array = np.array([_plain(x) for x in data] if any(isinstance(x, Tensor) for x in data) else data)
    else:
        array = np.asarray(data)
    target = dtype or _infer_dtype(data)
    if array.dtype == object:
        raise TypeError("tensor(): could not convert data with ragged or non-numeric elements")
    if target is bfloat16:
        out = wrap(_bfloat16.from_values(np, array))
    else:
        out = wrap(np.array(array, dtype=target.np, copy=True))
    if _mode.inference:
        grad_mode.mark_inference((out,))
    if _tracer[0] is not None:
        _tracer[0].constant(out)
    return _fresh(out, requires_grad)


def _plain(x):
    return x._data if isinstance(x, Tensor) else x


def as_tensor(data, dtype: dtype | None = None, device=None) -> Tensor:
    """Like tensor(), but shares memory with a numpy array or Tensor of the same dtype."""
    check_device_arg(device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == dtype.np):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    from_numpy_dtype(array.dtype)
    if _bfloat16.holds(array):
        _bfloat16.SEEN[0] = True
    return wrap(array)


# --- indexing ---------------------------------------------------------------------------

_INDEX_OPS = {name: _ops.OPS[name] for name in ("select", "slice", "unsqueeze", "index")}
_SLICE = _ops.OPS["slice"]
_INDEX = _ops.OPS["index"]
_INDEX_PUT = _ops.OPS["index_put"]
_COPY = _ops.OPS["copy"]
_TO_DTYPE = _ops.OPS["to.dtype"]


def _index_items(index) -> list:
    """An eager index (an int, slice, None, ..., bool, tensor, list or array, or a tuple of them) as
    the items ops/subscript.py lowers."""
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for item in index:
        if item is None:
            items.append(indexing.Item(indexing.NEWAXIS))
        elif item is Ellipsis:
            items.append(indexing.Item(indexing.ELLIPSIS))
        elif isinstance(item, bool):
            items.append(indexing.Item(indexing.BOOL, item))
        elif isinstance(item, (int, np.integer)):
            items.append(indexing.Item(indexing.INT, int(item)))
        elif isinstance(item, slice):
            step = None if item.step is None else _as_int(item.step)
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            items.append(indexing.Item(indexing.SLICE, start=_opt_int(item.start), stop=_opt_int(item.stop),
                                       step=None if step == 1 else step))
        elif isinstance(item, (Tensor, list, np.ndarray)):
            t = item if isinstance(item, Tensor) else tensor(item)
            if t._data.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            items.append(indexing.Item(indexing.TENSOR, t, dims=t._data.ndim if t._data.dtype == np.bool_ else 1))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(item).__name__})")
    return items


def _run_index_op(name: str, args: tuple):
    if name == "index_put_":
        return call_inplace(_INDEX_PUT.inplace, args)
    if name == "copy_":
        return call_inplace(_COPY.inplace, args)
    return call(_INDEX_OPS[name], args)


def _as_int(v):
    if isinstance(v, Tensor):
        return int(v.item())
    return int(v)


def _opt_int(v):
    return None if v is None else _as_int(v)


def _getitem(x: Tensor, index) -> Tensor:
    out, indices = indexing.lower(_run_index_op, x, _index_items(index), x.dim())
    if indices:
        return call(_INDEX, (out, indices))
    if out is x:
        return call(_SLICE, (x, 0, None, None, 1)) if x.dim() else _view_of(x, x._data)
    return out


def _setitem(x: Tensor, index, value) -> None:
    view, indices = indexing.lower(_run_index_op, x, _index_items(index), x.dim())
    if indices:
        if view is not x and not np.may_share_memory(view._data, x._data):
            raise RuntimeError("unsupported index for assignment")
        values = value if isinstance(value, Tensor) else tensor(value, dtype=x.dtype)
        call_inplace(_INDEX_PUT.inplace, (view, indices, values, False))
        return
    if view is x:
        view = _view_of(x, x._data)
    call_inplace(_COPY.inplace, (view, value))


# --- printing (PyTorch's format) -----------------------------------------------------------

_PRECISION, _THRESHOLD, _EDGEITEMS, _LINEWIDTH = 4, 1000, 3, 80


class _Formatter:
    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        lo, hi = np.abs(finite).min(), np.abs(finite).max()
        values_list = finite.tolist()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                width = max(len(f"{v:.{_PRECISION}e}") for v in values_list)
            else:
                width = max(len(f"{v:.0f}") + 1 for v in values_list)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            width = max(len(f"{v:.{_PRECISION}e}") for v in values_list)
        else:
            width = max(len(f"{v:.{_PRECISION}f}") for v in values_list)
        self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{_PRECISION}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{_PRECISION}f}"
        else:
            text = str(value)
        return (self.max_width - len(text)) * " " + text


class _ComplexFormatter:
    """PyTorch's complex printing: real and imaginary parts each laid out by their own formatter."""

    def __init__(self, values: np.ndarray):
        self.real, self.imag = _Formatter(values.real), _Formatter(values.imag)
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, value) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _summarized(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * _EDGEITEMS:
        parts = [a[:_EDGEITEMS], a[-_EDGEITEMS:]]
    else:
        parts = [a]
    return np.concatenate([np.stack([_summarized(row) for row in p]) if p.ndim > 1 else p for p in parts])


def _format_array(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        per_line = max(1, int(math.floor((_LINEWIDTH - indent) / (fmt.max_width + 2))))
        if summarize and a.shape[0] > 2 * _EDGEITEMS:
            data = ([fmt.format(v) for v in a[:_EDGEITEMS].tolist()] + [" ..."]
                    + [fmt.format(v) for v in a[-_EDGEITEMS:].tolist()])
        else:
            data = [fmt.format(v) for v in a.tolist()]
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"
    if summarize and a.shape[0] > 2 * _EDGEITEMS:
        rows = ([_format_array(a[i], indent + 1, summarize, fmt) for i in range(_EDGEITEMS)] + ["..."]
                + [_format_array(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - _EDGEITEMS, a.shape[0])])
    else:
        rows = [_format_array(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(a: np.ndarray, indent: int) -> str:
    """The bracketed values of an array as PyTorch prints them (for tensors and Parameters)."""
    if a.dtype == np.float16 or _bfloat16.holds(a):
        a = _values(a).astype(np.float32)
    summarize = a.size > _THRESHOLD
    shown = _summarized(a) if summarize else a
    fmt = _ComplexFormatter(shown) if a.dtype.kind == "c" else _Formatter(shown)
    return _format_array(a, indent, summarize, fmt)


def _tensor_repr(t: Tensor, prefix: str = "tensor(") -> str:
    a = t._data
    indent = len(prefix)
    suffixes = []
    d = t.dtype
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if d is not DEFAULT_FLOAT:
            suffixes.append(f"dtype={d!r}")
        body = "[]"
    else:
        if d not in (DEFAULT_FLOAT, int64, bool_, DEFAULT_COMPLEX):
            suffixes.append(f"dtype={d!r}")
        body = format_data(a, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last_len = len(text) - text.rfind("\n") + 1
    parts = [text]
    for s in suffixes:
        if last_len + len(s) + 2 > _LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_len += len(s) + 2
    parts.append(")")
    return "".join(parts)



# Tensor's op methods and operators are generated from the op table.
from scriptc import bindings  # noqa: E402,F401
