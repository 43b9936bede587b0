"""torch.sparse and sparse COO tensors (torch.sparse_coo_tensor, Tensor.to_sparse): mm, sum, addmm, softmax,
log_softmax, sampled_addmm and spdiags.

A sparse tensor is a Tensor whose data is its dense form, made by the `sparse_coo_tensor` op from its
COO indices and values, which it keeps too (`indices()`, `values()`, `_nnz()`, `coalesce()`). Every op
therefore accepts it with PyTorch's dense semantics (a sparse-dense product gives a dense result), and
gradients reach the values at their positions only, as PyTorch's sparse gradients do. The dense form
costs the memory of a dense tensor: this is sparse COO for correctness and interchange, not for size.
There are no CSR tensors: sampled_addmm, which PyTorch runs on a CSR input, takes a COO one here.
"""

from __future__ import annotations

import numpy as np

from scriptc import ops as _ops
from scriptc.ops.matrix import torch_name
from scriptc.tensors import Tensor, _tracer, call, tensor, wrap
from scriptc.tensors.subclass import _disabled_torch_function_impl
from scriptc.tensors.printing import dtype_implied

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "sum", "addmm", "softmax", "log_softmax", "sampled_addmm",
           "spdiags", "layout", "strided", "sparse_coo"]


class layout:
    """How a tensor's elements are stored: `scriptc.strided` (dense) or `scriptc.sparse_coo`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")

_TO_DENSE = _ops.OPS["sparse_coo_tensor"]
_INDEX = _ops.OPS["index"]


class SparseTensor(Tensor):
    """A sparse COO tensor: `indices()` (sparse_dim, nnz), `values()` (nnz, *dense_dims) and its size."""

    __slots__ = ("_coo_indices", "_coo_values", "_coalesced")
    __torch_function__ = _disabled_torch_function_impl  # (its ops handle it themselves)

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
        extra = "" if dtype_implied(self.dtype) else f", dtype={self.dtype!r}"
        # the dtype is said once, after the size, as torch prints it
        values = repr(self._coo_values).removesuffix(extra + ")") + ")" if extra else repr(self._coo_values)
        values = values.replace("\n", "\n" + pad + " " * len("values="))
        return (f"tensor(indices={indices},\n{pad}values={values},\n{pad}size={tuple(self.shape)}, "
                f"nnz={self._nnz()}{extra}, layout=torch.sparse_coo)")

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


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2) for a sparse COO (or dense) mat1: a dense result, and mat1's gradient
    at its stored positions only."""
    return call(_ops.OPS["addmm"], (mat, mat1, mat2, beta, alpha))


def _specified(sparse: SparseTensor) -> np.ndarray:
    """True at every element a coalesced sparse tensor stores (whole dense slices of a hybrid tensor)."""
    pattern = np.zeros(tuple(sparse.shape), dtype=bool)
    pattern[tuple(sparse._coo_indices._data)] = True
    return pattern


def _masked_softmax(input: Tensor, dim: int, dtype, log: bool) -> SparseTensor:
    """softmax over the stored elements along dim, the unstored ones taken as -inf (they stay unstored)."""
    from scriptc.ops.rules import normalize_dim

    name = "log_softmax" if log else "softmax"
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(f"Could not run 'aten::_sparse_{name}' with arguments from the 'CPU' backend.")
    dim = normalize_dim(dim, input.dim())
    source = input.coalesce()
    dense = _dense_view(source) if dtype is None else _dense_view(source).to(dtype)
    pattern = _specified(source)
    # Shift each line by its largest stored element (a constant: softmax does not depend on it), so
    # exp never overflows; a line with nothing stored sums to 0 and stays 0.
    stored = np.where(pattern, dense._data, -np.inf)
    shift = np.max(stored, axis=dim, keepdims=True, initial=-np.inf)
    shift = wrap(np.where(np.isfinite(shift), shift, 0).astype(dense._data.dtype))
    keep = wrap(pattern)
    shifted = dense.sub(shift).where(keep, 0.0)
    total = shifted.exp().where(keep, 0.0).sum(dim, keepdim=True).clamp_min(1.0)
    out = shifted.sub(total.log()) if log else shifted.exp().div(total)
    values = call(_INDEX, (out, [wrap(row) for row in source._coo_indices._data]))
    return _sparse(call(_TO_DENSE, (source._coo_indices, values, list(source.shape))), source._coo_indices, values,
                   coalesced=True)


def softmax(input: Tensor, dim: int, *, dtype=None) -> SparseTensor:
    """softmax of a sparse COO tensor along dim over its stored elements only (the others count as -inf, so
    they stay unstored); a sparse result with the input's pattern."""
    return _masked_softmax(input, dim, dtype, log=False)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> SparseTensor:
    """log_softmax of a sparse COO tensor along dim over its stored elements only; a sparse result."""
    return _masked_softmax(input, dim, dtype, log=True)


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0,
                  out=None) -> SparseTensor:
    """beta * input + alpha * (mat1 @ mat2) at input's stored positions only: a sparse tensor with input's
    pattern (PyTorch takes a sparse CSR input; scriptc's sparse tensors are COO). Batched over leading dims."""
    if out is not None:
        raise RuntimeError("sampled_addmm: out= is not supported by scriptc")
    if not isinstance(input, SparseTensor):
        raise NotImplementedError("Could not run 'aten::sparse_sampled_addmm' with arguments from the 'CPU' "
                                  "backend.")
    for name, mat in (("mat1", mat1), ("mat2", mat2)):
        if mat.dim() < 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a matrix, got {mat.dim()}-D tensor")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"sampled_addmm: Expected mat1 and mat2 to have the same dtype, but got "
                           f"{torch_name(mat1._data.dtype)} and {torch_name(mat2._data.dtype)}")
    if mat1.shape[-1] != mat2.shape[-2]:
        raise RuntimeError(f"sampled_addmm: mat1 and mat2 shapes cannot be multiplied ({mat1.shape[-2]}x"
                           f"{mat1.shape[-1]} and {mat2.shape[-2]}x{mat2.shape[-1]})")
    if input.shape[-2] != mat1.shape[-2]:
        raise RuntimeError("sampled_addmm: self.shape[-2] must match mat1.shape[-2]")
    if input.shape[-1] != mat2.shape[-1]:
        raise RuntimeError("sampled_addmm: self.shape[-1] must match mat2.shape[-1]")
    source = input.coalesce()
    *batch, rows, columns = [wrap(row) for row in source._coo_indices._data]
    left = call(_INDEX, (mat1, batch + [rows]))                       # (nnz, k): mat1's row of each element
    right = call(_INDEX, (mat2.transpose(-1, -2), batch + [columns]))  # (nnz, k): mat2's column of each element
    values = source._coo_values.mul(beta).add(left.mul(right).sum(-1), alpha=alpha)
    return _sparse(call(_TO_DENSE, (source._coo_indices, values, list(source.shape))), source._coo_indices, values,
                   coalesced=True)


def spdiags(diagonals: Tensor, offsets: Tensor, shape, layout=None) -> SparseTensor:
    """The shape[0] x shape[1] sparse matrix with row i of diagonals on the diagonal offsets[i] (above the main
    one when positive); element (r, r + k) takes diagonals[i, r + k], as scipy.sparse.spdiags."""
    from scriptc.types import int64

    if not isinstance(offsets, Tensor):
        raise TypeError(f"_spdiags(): argument 'offsets' (position 2) must be Tensor, not {type(offsets).__name__}")
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"Only output layouts (Sparse, SparseCsc, SparseCsr) are supported, got "
                           f"{str(layout.name).capitalize()}")
    if len(shape) != 2:
        raise RuntimeError("Output shape must be 2d")
    if diagonals.dim() > 2:
        raise RuntimeError("Diagonals must be vector or matrix")
    if offsets.dim() > 1:
        raise RuntimeError("Offsets must be scalar or vector")
    if offsets.dtype is not int64:
        raise RuntimeError(f"Offset Tensor must have dtype Long but got {torch_name(offsets._data.dtype)}")
    table = diagonals.reshape(1, -1) if diagonals.dim() < 2 else diagonals
    shifts = [int(k) for k in np.atleast_1d(offsets._data)]
    if len(set(shifts)) != len(shifts):
        raise RuntimeError("Offset tensor contains duplicate values")
    if table.shape[0] != len(shifts):
        raise RuntimeError(f"Number of diagonals ({table.shape[0]}) does not match the number of offsets "
                           f"({len(shifts)})")
    height, width = (int(s) for s in shape)
    length = table.shape[1]
    row_parts, column_parts, diagonal_parts = [], [], []
    for i, k in enumerate(shifts):
        columns = np.arange(max(k, 0), min(height + k, width, length))
        row_parts.append(columns - k)
        column_parts.append(columns)
        diagonal_parts.append(np.full(columns.shape, i))
    rows, columns, which = (np.concatenate(parts).astype(np.int64) for parts in (row_parts, column_parts,
                                                                                  diagonal_parts))
    values = call(_INDEX, (table, [wrap(which), wrap(columns)]))
    return sparse_coo_tensor(tensor(np.stack([rows, columns])), values, (height, width))
