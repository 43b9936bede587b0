"""The Tensor class: a numpy array with PyTorch's dtype rules, views, version counters and autograd.

Its op methods and operators are generated from the op table (scriptc/bindings.py); the methods
written here reach the kernels through dispatch.call, which is built on this class and so is
imported after it, at the bottom of this module.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np

from scriptc import autograd, grad_mode
from scriptc import ops as _ops
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops import rules as _rules
from scriptc.tensors.conversion import Conversions, check_device_arg
from scriptc.tensors.inspection import Inspection
from scriptc.tensors.linalg_methods import LinalgMethods
from scriptc.ops.meta import MetaArray, contiguous_strides
from scriptc.tensors.storage_methods import StorageMethods
from scriptc.tensors.printing import _tensor_repr
from scriptc.tensors.quantized_methods import QuantizedMethods
from scriptc.tensors import subclass as _subclass
from scriptc.types import CPU, META, channels_last, channels_last_3d, default_float, device, dtype, from_numpy_dtype

_mode = autograd._mode
# numpy dtype kinds that carry gradients: float, complex, and "V", bfloat16's structured patterns.
_DIFFERENTIABLE_KINDS = "fcV"
# The active tracer (scriptc.jit.trace sets it); a list so the hot path reads one global.
_tracer: list = [None]
_COPY = _ops.OPS["copy"]
_QuantizedArray = _ops.quantized.QuantizedArray


class Size(tuple):
    """The shape of a tensor: a tuple of ints, printed as `torch.Size([2, 3])` (as torch prints it).
    Built from any iterable of ints (numpy integers and one-element integer tensors too); slicing,
    `+` with a tuple and `*` by an int give a Size."""

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        if all(item.__class__ is int for item in items):
            return tuple.__new__(cls, items)
        checked = []
        for position, item in enumerate(items):
            if isinstance(item, int) and not isinstance(item, bool):
                checked.append(item)  # (a traced size stays one)
            elif hasattr(type(item), "__index__"):
                try:
                    checked.append(item.__index__())
                except TypeError:  # (a float tensor's __index__ refuses)
                    raise _not_a_size(position, item) from None
            else:
                raise _not_a_size(position, item)
        return tuple.__new__(cls, checked)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def __reduce__(self):
        return Size, (tuple(self),)

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return tuple.__new__(Size, item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to torch.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if isinstance(other, list):
            raise TypeError('can only concatenate list (not "torch.Size") to list')
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, times):
        if not hasattr(type(times), "__index__"):
            raise TypeError(f"can't multiply sequence by non-int of type '{type(times).__name__}'")
        return tuple.__new__(Size, tuple.__mul__(self, times))

    __rmul__ = __mul__


_unchecked_size = tuple.__new__  # Size's constructor without its checks, for sizes known to be ints


def _not_a_size(position: int, item) -> TypeError:
    return TypeError(f"torch.Size() takes an iterable of 'int' (item {position} is '{type(item).__name__}')")


def _complex_part(op_name: str, doc: str) -> property:
    """The `real` / `imag` attribute: reading gives the view the op makes, assigning writes through it."""
    def read(self):
        return call(_ops.OPS[op_name], (self,))

    def write(self, value) -> None:
        read(self).copy_(value)
    return property(read, write, doc=doc)

class Tensor(Conversions, Inspection, StorageMethods, LinalgMethods, QuantizedMethods):
    """An n-dimensional array with autograd, backed by a numpy array (`scriptc.tensor([...])`)."""

    # (__dict__: user code sets attributes of its own on tensors, as torch's allow: `pe.require_grad = False`)
    __slots__ = ("_data", "requires_grad", "grad", "grad_fn", "_out_index", "_vc", "_base", "__weakref__", "__dict__")
    __array_priority__ = 1000
    # whether ops on instances call __torch_function__ (subclass.py): a subclass's, unless it opts out
    _dispatches_subclass = False
    __torch_function__ = classmethod(_subclass.default_torch_function)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._dispatches_subclass = _subclass.dispatches(cls)

    _make_subclass = staticmethod(_subclass.make_subclass)

    def as_subclass(self, cls) -> "Tensor":
        """This tensor as an instance of the Tensor subclass `cls`, sharing its data and autograd history."""
        return _subclass.as_subclass(self, cls)

    def __init__(self, *args):
        if len(args) == 1 and not isinstance(args[0], int):
            data = np.asarray(args[0], dtype=default_float().np)
        else:
            data = np.empty(tuple(args), dtype=default_float().np)
        _init(self, data)

    # --- basic properties ------------------------------------------------------
    @property
    def shape(self) -> Size:
        tracer = _tracer[0]
        if tracer is not None:
            return tracer.traced_size(self)
        return _unchecked_size(Size, self._data.shape)  # (numpy's sizes are ints: nothing to check)

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
        return META if type(self._data) is MetaArray else CPU

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
        """Whether this tensor is on the meta device: a shape and a dtype, no data."""
        return type(self._data) is MetaArray

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

    @property
    def H(self) -> "Tensor":
        """The conjugate transpose of a matrix (2-D tensor)."""
        if self.dim() == 0:
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
            return self.conj()
        if self.dim() != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                               + (" For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""))
        return self.mT.conj()

    @property
    def mH(self) -> "Tensor":
        """The conjugate transpose of the last two dims (a matrix or a batch of them)."""
        if self.dim() < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.mT.conj()

    def untyped_storage(self):
        """The bytes of the whole buffer this tensor and its views share (data_ptr, nbytes, size)."""
        return _storage.untyped_storage(self)

    def storage(self):
        """The buffer as elements of this dtype (torch's deprecated TypedStorage)."""
        return _storage.typed_storage(self)

    def apply_(self, callable) -> "Tensor":
        """Replace each element x by callable(x), in place (Python per element: slow)."""
        return _storage.apply_(self, callable)

    def map_(self, tensor: "Tensor", callable) -> "Tensor":
        """Replace each element x by callable(x, y), y from `tensor` broadcast to this shape, in place."""
        return _storage.map_(self, tensor, callable)

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
        if type(self._data) is MetaArray:  # (laid out row-major, as contiguous_strides reports)
            return memory_format not in (channels_last, channels_last_3d)
        if memory_format in (channels_last, channels_last_3d):
            rank = 4 if memory_format == channels_last else 5
            if self._data.ndim != rank:
                return False
            order = (0,) + tuple(range(2, rank)) + (1,)
            return bool(self._data.transpose(order).flags.c_contiguous)
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None):
        if type(self._data) is MetaArray:
            strides = contiguous_strides(self._data.shape)
        else:
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
        """The address of the first element (0 for a meta tensor, which has none)."""
        return 0 if type(self._data) is MetaArray else self._data.ctypes.data

    def __hash__(self) -> int:
        return id(self)

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: say whether torch has the name (not a guess at another).
        from scriptc.torch_names import missing
        raise missing("torch.Tensor", f"'{type(self).__name__}' object", name, dir(type(self)))


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
        if requires_grad and (self._data.dtype.kind not in _DIFFERENTIABLE_KINDS
                              or type(self._data) is _QuantizedArray):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def is_inference(self) -> bool:
        """Whether this tensor was made under `inference_mode`."""
        return grad_mode.is_inference(self)

    def register_hook(self, hook):
        """Call `hook(grad)` each time a gradient for this tensor is computed; a hook that returns a
        Tensor replaces the gradient. Returns a handle; `handle.remove()` unregisters the hook."""
        from scriptc.autograd.hooks import register_hook
        return register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(tensor)` on this leaf after backward has accumulated into its `.grad`."""
        from scriptc.autograd.hooks import register_post_accumulate_grad_hook
        return register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward."""
        import weakref

        if self.grad_fn is None:
            return
        if self.grad_fn.retained is None:
            self.grad_fn.retained = {}
        self.grad_fn.retained[self._out_index] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """Whether retain_grad() was called on this non-leaf tensor (False for a leaf)."""
        retained = self.grad_fn.retained if self.grad_fn is not None else None
        return bool(retained) and self._out_index in retained


    # --- shape helpers that are compositions of table ops --------------------------
    def contiguous(self, memory_format=None) -> "Tensor":
        """self when already contiguous in memory_format (row-major by default, or channels_last), else a
        copy laid out so."""
        if memory_format in (channels_last, channels_last_3d):
            return self if self.is_contiguous(memory_format) else self.clone(memory_format=memory_format)
        if self._data.flags.c_contiguous or type(self._data) is MetaArray:
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
        return call_inplace(_ops.OPS["zero"].inplace, (self,))

    def fill_(self, value) -> "Tensor":
        return call_inplace(_ops.OPS["fill"].inplace, (self, value))

    def copy_(self, src, non_blocking: bool = False) -> "Tensor":
        return call_inplace(_COPY.inplace, (self, src))

    # --- new_* keep this tensor's dtype and device ------------------------------------
    def new_tensor(self, data, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["new_zeros"], (self, _size_arg(size), dtype, device)), requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["new_ones"], (self, _size_arg(size), dtype, device)), requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["empty"], (_size_arg(size), dtype or self.dtype, device or self.device, None)),
                      requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> "Tensor":
        check_device_arg(device)
        return _fresh(call(_ops.OPS["full"], (_size_arg((size,)), fill_value, dtype or self.dtype,
                                              device or self.device)), requires_grad)

    # --- indexing ------------------------------------------------------------------------
    def __getitem__(self, index) -> "Tensor":
        return _getitem(self, index)

    def __setitem__(self, index, value) -> None:
        _setitem(self, index, value)

    # --- printing -----------------------------------------------------------------------
    def __repr__(self) -> str:
        # (a subclass taking part in __torch_function__ prints its name: `MyTensor([1., 2.])`, as torch's)
        return _tensor_repr(self, f"{type(self).__name__}(" if self._dispatches_subclass else "tensor(")

    def __format__(self, spec: str) -> str:
        if type(self._data) is MetaArray:  # (no value to format: only the empty spec prints it, as torch's)
            return object.__format__(self, spec)
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._data.copy(), self.requires_grad), self.__dict__ or None)

    def __deepcopy__(self, memo):
        out = _fresh(wrap(self._data.copy()), self.requires_grad)
        if type(self) is not Tensor:
            out = type(self)(out, requires_grad=self.requires_grad)
        memo[id(self)] = out
        if self.__dict__:
            out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return out



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
    if type(data) is not np.ndarray and type(data) is not _QuantizedArray and type(data) is not MetaArray:
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


# The methods above run through these; each builds on Tensor, so they are imported once it exists.
from scriptc.tensors.creation import _size_arg, tensor  # noqa: E402
from scriptc.tensors.dispatch import call, call_inplace  # noqa: E402
from scriptc.tensors.indexing import _getitem, _setitem  # noqa: E402
from scriptc.tensors import storage as _storage  # noqa: E402
