"""Tensor's questions about itself (is_signed, storage_offset, get_device ...), the shape ops that change
a tensor in place (t_, squeeze_ ...) and the small compositions torch offers as methods (new,
sum_to_size, split_with_sizes, adjoint, isreal)."""

from __future__ import annotations

from typing import TYPE_CHECKING


from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.meta import MetaArray
from scriptc.types import bool_

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor


class Inspection:
    """These methods of scriptc.Tensor (a mixin: Tensor is the only class built on it)."""

    __slots__ = ()

    # --- where and how the tensor is stored ----------------------------------------
    @property
    def is_cpu(self) -> bool:
        return type(self._data) is not MetaArray

    # scriptc has no nested, CSR or MKL-DNN tensors; models test these to pick a path.
    is_nested = is_sparse_csr = is_mkldnn = property(lambda self: False)

    def get_device(self) -> int:
        """-1: the tensor is on the CPU (a CUDA tensor would give its device index)."""
        return -1

    def is_pinned(self) -> bool:
        return False

    def storage_offset(self) -> int:
        """How many elements into its storage this tensor's first element lies (x[1:] of a fresh
        tensor gives 1)."""
        from scriptc.ops.strided import storage_offset

        return storage_offset(self._data)

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (False for bool and uint8)."""
        return self._data.dtype.kind in "ifc" or _bfloat16.holds(self._data)

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor; torch's error for more or fewer elements."""
        size = self._data.size
        if size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if size > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item() != 0)

    def is_same_size(self, other: "Tensor") -> bool:
        return self.shape == other.shape

    def isreal(self) -> "Tensor":
        """True where the element has no imaginary part (everywhere for a real tensor)."""
        if self.is_complex():
            return self.imag == 0
        return self.new_ones(self.shape, dtype=bool_)

    # --- compositions of table ops ------------------------------------------------------
    def adjoint(self) -> "Tensor":
        """The conjugate transpose of the last two dims (a view for real tensors)."""
        if self.dim() < 2:
            raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                               f"{self.dim()}-D tensor.")
        return self.transpose(-2, -1).conj()

    def sum_to_size(self, *size) -> "Tensor":
        """Sum this tensor down to `size`, which it must be expandable from (a gradient's reduction)."""
        from scriptc.tensors.creation import _size_arg

        shape = tuple(_size_arg(size))
        own = tuple(self.shape)
        lead = len(own) - len(shape)
        if lead < 0 or any(s not in (1, o) for s, o in zip(shape, own[lead:])):
            raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(own)}}}.")
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and own[lead + i] != 1]
        out = self.sum(dims, keepdim=True) if dims else self
        return out.reshape(shape) if lead else out

    def split_with_sizes(self, split_sizes, dim: int = 0) -> tuple:
        """Split along dim into pieces of exactly these sizes (they must sum to the dim's size)."""
        from scriptc.ops.rules import normalize_dim

        d = normalize_dim(dim, self._data.ndim, "split_with_sizes")
        if sum(split_sizes) != self._data.shape[d]:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {self._data.shape[d]} "
                               f"(input tensor's size at dimension {dim}), but got split_sizes={list(split_sizes)}")
        return self.split(list(split_sizes), d)

    def new(self, *args, device=None) -> "Tensor":
        """Legacy constructor with this tensor's dtype: new(2, 3) is uninitialised, new([1, 2]) (or a
        tuple) copies data, new(tensor) aliases it, new() is empty."""
        from scriptc.tensors.conversion import check_device_arg
        from scriptc.tensors.core import Tensor, _detached_alias

        check_device_arg(device)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} (got {args[0].dtype})")
            return _detached_alias(args[0])
        if len(args) == 1 and not isinstance(args[0], int):
            if isinstance(args[0], (float, complex)):
                raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
            return self.new_tensor(args[0])
        if not all(isinstance(a, int) for a in args):
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        return self.new_empty(args if args else (0,))

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple:
        return self.chunk(chunks, dim)

    def unsafe_split(self, split_size, dim: int = 0) -> tuple:
        return self.split(split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes, dim: int = 0) -> tuple:
        return self.split_with_sizes(split_sizes, dim)

    # --- numeric composites (scriptc/numerics.py, which builds on Tensor: imported on use) ----------
    def cov(self, *, correction: int = 1, fweights=None, aweights=None) -> "Tensor":
        from scriptc import numerics

        return numerics.cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self) -> "Tensor":
        from scriptc import numerics

        return numerics.corrcoef(self)

    def renorm(self, p: float, dim: int, maxnorm: float) -> "Tensor":
        from scriptc import numerics

        return numerics.renorm(self, p, dim, maxnorm)

    def renorm_(self, p: float, dim: int, maxnorm: float) -> "Tensor":
        from scriptc import numerics

        return self.copy_(numerics.renorm(self, p, dim, maxnorm))

    def stft(self, n_fft: int, *args, **kwargs) -> "Tensor":
        """torch.stft(self, ...) (scriptc/spectral.py)."""
        from scriptc import spectral

        return spectral.stft(self, n_fft, *args, **kwargs)

    def istft(self, n_fft: int, *args, **kwargs) -> "Tensor":
        """torch.istft(self, ...) (scriptc/spectral.py)."""
        from scriptc import spectral

        return spectral.istft(self, n_fft, *args, **kwargs)

    def cholesky_solve(self, input2: "Tensor", upper: bool = False) -> "Tensor":
        from scriptc import numerics

        return numerics.cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> "Tensor":
        from scriptc import numerics

        return numerics.cholesky_inverse(self, upper)

    # --- shape ops in place: the tensor becomes the view -----------------------------------
    def t_(self) -> "Tensor":
        return _become(self, self.t())

    def transpose_(self, dim0: int, dim1: int) -> "Tensor":
        return _become(self, self.transpose(dim0, dim1))

    def swapaxes_(self, axis0: int, axis1: int) -> "Tensor":
        return _become(self, self.transpose(axis0, axis1))

    swapdims_ = swapaxes_

    def squeeze_(self, dim=None) -> "Tensor":
        return _become(self, self.squeeze() if dim is None else self.squeeze(dim))

    def unsqueeze_(self, dim: int) -> "Tensor":
        return _become(self, self.unsqueeze(dim))


def _become(target: "Tensor", view: "Tensor") -> "Tensor":
    """target takes view's shape, strides and history (torch's in-place view ops keep the object)."""
    from scriptc.tensors.core import _tracer
    from scriptc.tensors.dispatch import _check_inplace_allowed

    _check_inplace_allowed(target, ())
    target._data = view._data
    if view.grad_fn is not None:
        target.grad_fn, target._out_index = view.grad_fn, view._out_index
    tracer = _tracer[0]
    if tracer is not None:
        tracer.alias(view, target)
    return target
