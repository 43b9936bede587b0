"""Eigendecompositions: eigh/eigvalsh (Hermitian, real eigenvalues) and eig/eigvals (general, complex).

Kernels call numpy.linalg (LAPACK); gradients are PyTorch's linalg_eig_backward in its conjugate
Wirtinger convention.
"""

from __future__ import annotations

from . import register
from .matrix import conj, mH, out_type, real_type, require_floating, require_matrix, torch_name
from .schema import OPAQUE



# --- eigh ----------------------------------------------------------------------------------

def eigh_check(a, uplo, name):
    if a.dtype.kind not in "fc":
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{torch_name(a.dtype)}'")
    require_matrix(a, name, square=True)
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


def _eigh_kernel(xp, a, uplo="L"):
    eigh_check(a, uplo, "linalg.eigh")
    values, vectors = xp.linalg.eigh(a, UPLO=uplo)
    return values, vectors


def eigh_grad(xp, values, vectors, g_values, g_vectors):
    """PyTorch's linalg_eig_backward for Hermitian input."""
    if g_vectors is None:
        return (vectors * g_values[..., None, :]) @ mH(vectors)
    vh_gv = mH(vectors) @ g_vectors
    vh_gv = 0.5 * (vh_gv - mH(vh_gv))
    e = conj(values)[..., None, :] - conj(values)[..., :, None]
    xp.einsum("...ii->...i", e)[...] = 1
    inner = vh_gv / e
    if g_values is not None:
        xp.einsum("...ii->...i", inner)[...] = g_values
    return vectors @ inner @ mH(vectors)


def _eigh_rule(a, uplo="L"):
    values = out_type(a, None if a.shape is None else a.shape[:-1], real_type(a))
    return values, out_type(a, a.shape)


register("linalg_eigh(A: Tensor, UPLO: str = 'L') -> (Tensor, Tensor)", OPAQUE, _eigh_kernel, shape=_eigh_rule,
         grad=lambda ctx, g: (eigh_grad(ctx.xp, ctx.out[0], ctx.out[1], g[0], g[1]), None), save=("out",),
         complex_aware=True, result_names=("eigenvalues", "eigenvectors"), method=False, function=False,
         doc="Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian matrix (its UPLO triangle).")


def _eigvalsh_kernel(xp, a, uplo="L"):
    eigh_check(a, uplo, "linalg.eigh")
    return xp.linalg.eigvalsh(a, UPLO=uplo)


def _eigvalsh_grad(ctx, g):
    values, vectors = ctx.xp.linalg.eigh(ctx.A, UPLO=ctx.UPLO)
    return eigh_grad(ctx.xp, values, vectors, g, None), None


register("linalg_eigvalsh(A: Tensor, UPLO: str = 'L') -> Tensor", OPAQUE, _eigvalsh_kernel,
         shape=lambda a, uplo="L": _eigh_rule(a)[0], grad=_eigvalsh_grad, save=("A",), complex_aware=True,
         method=False, function=False, doc="The eigenvalues (ascending) of a Hermitian matrix.")


# --- eig (general matrices: complex results) ---------------------------------------------------

def _eig_kernel(xp, a):
    require_floating(a, "linalg.eig")
    require_matrix(a, "linalg.eig", square=True)
    values, vectors = xp.linalg.eig(a)
    complex_dtype = xp.complex128 if a.dtype in (xp.float64, xp.complex128) else xp.complex64
    return values.astype(complex_dtype), vectors.astype(complex_dtype)


def eig_grad(xp, values, vectors, g_values, g_vectors):
    """PyTorch's linalg_eig_backward (unit-norm eigenvectors, distinct eigenvalues)."""
    v_h = mH(vectors)
    if g_vectors is None:
        return xp.linalg.solve(v_h, g_values[..., :, None] * v_h)
    inner = v_h @ g_vectors
    diagonal = xp.einsum("...ii->...i", inner).real
    inner = inner - v_h @ (vectors * diagonal[..., None, :])
    e = conj(values)[..., None, :] - conj(values)[..., :, None]
    xp.einsum("...ii->...i", e)[...] = 1
    inner = inner / e
    if g_values is not None:
        xp.einsum("...ii->...i", inner)[...] = g_values
    return xp.linalg.solve(v_h, inner @ v_h)


def _eig_rule(a):
    complex_type = a.dtype.to_complex() if a.dtype is not None else None
    values = out_type(a, None if a.shape is None else a.shape[:-1], complex_type)
    return values, out_type(a, a.shape, complex_type)


register("linalg_eig(A: Tensor) -> (Tensor, Tensor)", OPAQUE, _eig_kernel, shape=_eig_rule,
         grad=lambda ctx, g: (eig_grad(ctx.xp, ctx.out[0], ctx.out[1], g[0], g[1]),), save=("out",),
         complex_aware=True, result_names=("eigenvalues", "eigenvectors"), method=False, function=False,
         doc="Eigenvalues and unit-norm eigenvectors of a square matrix (complex, as PyTorch returns them).")


def _eigvals_grad(ctx, g):
    values, vectors = _eig_kernel(ctx.xp, ctx.A)
    return (eig_grad(ctx.xp, values, vectors, g, None),)


register("linalg_eigvals(A: Tensor) -> Tensor", OPAQUE, lambda xp, a: _eig_kernel(xp, a)[0],
         shape=lambda a: _eig_rule(a)[0], grad=_eigvals_grad, save=("A",), complex_aware=True, method=False,
         function=False, doc="The (complex) eigenvalues of a square matrix.")
