"""torch.sparse and sparse COO tensors (torch.sparse_coo_tensor, Tensor.to_sparse) as the GCN example uses them.

A sparse tensor is a Tensor whose data is its dense form, made by the `sparse_coo_tensor` op from its
COO indices and values, which it keeps too (`indices()`, `values()`, `_nnz()`, `coalesce()`). Every op
therefore accepts it with PyTorch's dense semantics (a sparse-dense product gives a dense result), and
gradients reach the values at their positions only, as PyTorch's sparse gradients do. The dense form
costs the memory of a dense tensor: this is sparse COO for correctness and interchange, not for size.
"""

from __future__ import annotations

import numpy as np

from scriptc import ops as _ops
from scriptc.tensors import Tensor, _tracer, call, tensor, wrap

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "sum", "layout", "strided", "sparse_coo"]


class layout:
    """How a tensor's elements are stored: `scriptc.strided` (dense) or `scriptc.sparse_coo`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"scriptc.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")

_TO_DENSE = _ops.OPS["sparse_coo_tensor"]
_INDEX = _ops.OPS["index"]


class SparseTensor(Tensor):
    """A sparse COO tensor: `indices()` (sparse_dim, nnz), `values()` (nnz, *dense_dims) and its size."""

    __slots__ = ("_coo_indices", "_coo_values", "_coalesced")

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self) -> layout:
        return sparse_coo

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._coo_indices

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._coo_values

    def _indices(self) -> Tensor:
        return self._coo_indices

    def _values(self) -> Tensor:
        return self._coo_values

    def _nnz(self) -> int:
        return self._coo_indices.shape[1]

    def sparse_dim(self) -> int:
        return self._coo_indices.shape[0]

    def dense_dim(self) -> int:
        return self._coo_values.dim() - 1

    def is_coalesced(self) -> bool:
        return self._coalesced

    def coalesce(self) -> "SparseTensor":
        """Repeated indices summed and indices sorted (row-major), as PyTorch's coalesce."""
        if self._coalesced:
            return self
        sparse_shape = tuple(self.shape[:self.sparse_dim()])
        unique = np.unique(np.ravel_multi_index(tuple(self._coo_indices._data), sparse_shape))
        indices = tensor(np.array(np.unravel_index(unique, sparse_shape), dtype=np.int64))
        values = call(_INDEX, (_dense_view(self), [wrap(row) for row in indices._data]))
        return _sparse(self, indices, values, coalesced=True)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        out = _dense_view(self)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None) -> "SparseTensor":
        return self

    def to(self, *args, **kwargs):
        out = super().to(*args, **kwargs)
        if out is self or out.dtype == self.dtype:
            return self
        return sparse_coo_tensor(self._coo_indices, self._coo_values.to(out.dtype), tuple(self.shape),
                                 is_coalesced=self._coalesced)

    def __add__(self, other):
        if isinstance(other, Tensor) and not other.is_sparse:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return super().__add__(other)

    def __matmul__(self, other):
        out = super().__matmul__(other)
        return to_sparse(out) if isinstance(other, SparseTensor) else out

    def __repr__(self) -> str:
        pad = " " * len("tensor(")
        indices = repr(self._coo_indices).replace("\n", "\n" + pad + " " * len("indices="))
        values = repr(self._coo_values).replace("\n", "\n" + pad + " " * len("values="))
        extra = "" if self.dtype.name == "float32" else f", dtype={self.dtype!r}"
        return (f"tensor(indices={indices},\n{pad}values={values},\n{pad}size={tuple(self.shape)}, "
                f"nnz={self._nnz()}{extra}, layout=scriptc.sparse_coo)")

    __str__ = __repr__


def _dense_view(sparse: SparseTensor) -> Tensor:
    """The dense form as a plain Tensor on the same data and autograd history."""
    out = wrap(sparse._data)
    out.requires_grad, out.grad_fn, out._out_index, out._vc = (sparse.requires_grad, sparse.grad_fn,
                                                                sparse._out_index, sparse._vc)
    if _tracer[0] is not None:
        _tracer[0].alias(sparse, out)
    return out


def _sparse(dense: Tensor, indices: Tensor, values: Tensor, coalesced: bool) -> SparseTensor:
    """A SparseTensor around the dense result of the `sparse_coo_tensor` op (keeping its autograd history)."""
    out = object.__new__(SparseTensor)
    for slot in ("_data", "requires_grad", "grad", "grad_fn", "_out_index", "_vc", "_base"):
        setattr(out, slot, getattr(dense, slot))
    out._coo_indices, out._coo_values, out._coalesced = indices, values, coalesced
    if _tracer[0] is not None:
        _tracer[0].alias(dense, out)
    return out


def sparse_coo_tensor(indices, values=None, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO tensor with the given indices (sparse_dim, nnz) and values (nnz, *dense_dims).

    size defaults to one past the largest index in each sparse dim; repeated indices add up.
    `sparse_coo_tensor(size, dtype=...)` alone is an empty sparse tensor of that size."""
    from scriptc.tensors import check_device_arg
    from scriptc.types import float32, int64

    check_device_arg(device)
    if values is None:
        if size is not None:
            raise TypeError("sparse_coo_tensor() missing required argument 'values'")
        size = [int(s) for s in indices]
        indices = tensor(np.zeros((len(size), 0), np.int64))
        values = tensor(np.zeros((0,), (dtype or float32).np))
    indices = indices if isinstance(indices, Tensor) else tensor(np.asarray(indices), dtype=int64)
    if indices._data.dtype.kind in "iu" and indices.dtype is not int64:
        indices = indices.long()
    values = values if isinstance(values, Tensor) else tensor(values)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if size is None:
        if indices.dim() != 2:
            raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
        lead = [int(row.max()) + 1 if row.size else 0 for row in indices._data]
        size = tuple(lead) + tuple(values.shape[1:])
    dense = call(_TO_DENSE, (indices, values, [int(s) for s in size]))
    out = _sparse(dense, indices, values, coalesced=bool(is_coalesced))
    if requires_grad:
        out.requires_grad_(True)
    return out


def to_sparse(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """x's nonzero elements (over its first sparse_dim dims) as a coalesced sparse COO tensor."""
    if isinstance(x, SparseTensor):
        return x
    sparse_dim = x.dim() if sparse_dim is None else sparse_dim
    data = x._data
    nonzero = np.any(data.reshape(data.shape[:sparse_dim] + (-1,)) != 0, axis=-1) if sparse_dim < data.ndim else \
        data != 0
    positions = np.nonzero(nonzero)
    indices = tensor(np.array(positions, dtype=np.int64).reshape(sparse_dim, -1))
    values = call(_INDEX, (x, [wrap(p) for p in positions]))
    return _sparse(call(_TO_DENSE, (indices, values, list(x.shape))), indices, values, coalesced=True)


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """mat1 @ mat2 for a sparse (or dense) mat1 and a dense mat2; the gradient of a sparse mat1 keeps its pattern."""
    if reduce != "sum":
        raise RuntimeError(f"torch.sparse.mm: reduce='{reduce}' is not supported by scriptc")
    out = call(_ops.OPS["spmm"], (mat1, mat2))
    return to_sparse(out) if isinstance(mat2, SparseTensor) else out


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001  (torch.sparse.sum)
    """The sum of a sparse tensor's elements: a dense 0-d tensor, or over dim a sparse tensor."""
    dense = input.to_dense() if isinstance(input, SparseTensor) else input
    if dim is None:
        return dense.sum(dtype=dtype)
    return to_sparse(dense.sum(dim, dtype=dtype))
