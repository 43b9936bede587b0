"""The ops behind sparse COO tensors: scattering (indices, values) into their dense form, and spmm.

A scriptc sparse tensor keeps its COO indices and values beside the dense array this op makes from
them (scriptc.sparse), so every op on it has the dense semantics PyTorch gives sparse-dense products,
and gradients reach the values, at the stored positions only, through this op.
"""

from __future__ import annotations

from scriptc.errors import ShapeError

from . import register
from .linalg import _checked_rank, _matmul_rule
from .matrix import out_type
from .schema import OPAQUE


def check_coo(indices, values, size):
    """PyTorch's invariants of a COO tensor (indices (sparse_dim, nnz), values (nnz, *dense_dims))."""
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if indices.dtype.kind not in "iu":
        raise RuntimeError("indices must be an int64 tensor")
    sparse_dim, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from values: "
                           f"{values.shape[0] if values.ndim else 1}")
    dense_dim = values.ndim - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if tuple(values.shape[1:]) != tuple(size[sparse_dim:]):
        raise ShapeError(f"values has incorrect size, expected {[nnz] + list(size[sparse_dim:])}, got "
                         f"{list(values.shape)}")
    for dim in range(sparse_dim):
        row = indices[dim]
        if nnz and row.min() < 0:
            raise RuntimeError(f"found negative index {int(row.min())} for dim {dim}")
        if nnz and row.max() >= size[dim]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} but found "
                               f"index {int(row.max())}")


def _to_dense_kernel(xp, indices, values, size):
    check_coo(indices, values, size)
    dense = xp.zeros(tuple(size), dtype=values.dtype)
    xp.add.at(dense, tuple(indices), values)  # repeated indices add up, as in an uncoalesced tensor
    return dense


register("sparse_coo_tensor(indices: Tensor, values: Tensor, size: int[]) -> Tensor", OPAQUE, _to_dense_kernel,
         shape=lambda i, v, size: out_type(v, size), grad=lambda ctx, g: (None, g[tuple(ctx.indices)], None),
         save=("indices",), method=False, function=False,
         doc="The dense form of the COO tensor (indices, values, size); repeated indices add up.")
register("spmm(self: Tensor, mat2: Tensor) -> Tensor", OPAQUE, _checked_rank(2, "spmm"), shape=_matmul_rule,
         grad=lambda ctx, g: (g @ ctx.mat2.T, ctx.self.T @ g), save=("self", "mat2"),
         doc="Matrix product of a (sparse or dense) matrix with a dense one.")
