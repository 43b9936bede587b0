"""weight_norm and spectral_norm as parametrizations (torch.nn.utils.parametrizations)."""

from __future__ import annotations

import math
from enum import Enum, auto

import numpy as np

import scriptc
from scriptc import mv, vdot
from scriptc.autograd import no_grad
from scriptc.tensors import Tensor

from ..functional import normalize
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from ._norms import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm taken over every dim but `dim` (over all of v when dim is None)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` by its magnitude and direction: state_dict keys
    `parametrizations.<name>.original0` (g) and `.original1` (v), as torch. A state dict saved with
    the old hook-based weight_norm (`<name>_g`, `<name>_v`) still loads."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_keys(module, state_dict, prefix, *rest) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(load_old_keys)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value estimated by power iteration on the buffers
    `_u` and `_v` (one iteration per forward in training mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", normalize(weight_mat.new_empty(h).normal_(0, 1), dim=0, eps=eps))
            self.register_buffer("_v", normalize(weight_mat.new_empty(w).normal_(0, 1), dim=0, eps=eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        sigma = vdot(self._u.clone(), mv(weight_mat, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm on every access; the power-iteration vectors are
    buffers `parametrizations.<name>.0._u` and `._v`. `dim` defaults to 1 for ConvTranspose, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _matrix_exp(a):
    """exp(a) for (batches of) square matrices: scaling and squaring of a degree-18 Taylor polynomial,
    built from matmuls so autograd differentiates it."""
    norm = float(a.detach().abs().sum(-2).amax(-1).max()) if a.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    x = a / 2.0 ** squarings
    identity = scriptc.eye(a.shape[-1], dtype=a.dtype).expand(a.shape)
    term, result = x, identity + x
    for k in range(2, 19):
        term = (term @ x) / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def _householder_product(reflectors, tau):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i = e_i + (column i of
    `reflectors` below the diagonal) (torch.linalg.householder_product)."""
    m, n = reflectors.shape[-2], reflectors.shape[-1]
    rows = scriptc.arange(m)
    q = scriptc.eye(m, dtype=reflectors.dtype).expand(tuple(reflectors.shape[:-2]) + (m, m))
    for i in range(tau.shape[-1]):
        v = scriptc.where(rows > i, reflectors[..., :, i], (rows == i).to(reflectors.dtype))
        q = q - (q @ v.unsqueeze(-1)) * (tau[..., i, None, None] * v.unsqueeze(-2))
    return q[..., :, :n]


def _make_orthogonal(a):
    """The Q of a's QR decomposition with its columns' signs those of R's diagonal (so Q R' = a with a
    positive diagonal in R')."""
    q, r = scriptc.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _is_orthogonal(q) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * float(np.finfo(q.dtype.np).eps)
    return scriptc.allclose(q.mT @ q, scriptc.eye(k, dtype=q.dtype), atol=eps)


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (columns orthonormal; rows when wide): by the
    matrix exponential or the Cayley transform of a skew-symmetric matrix, or by Householder
    reflections; with `use_trivialization` the result multiplies a stored orthogonal `base`."""

    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = scriptc.cat([X, X.new_zeros(n, n - k).expand(tuple(X.shape[:-2]) + (-1, -1))], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                identity = scriptc.eye(n, dtype=A.dtype)
                Q = scriptc.linalg.solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            initial = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map != _OrthMaps.householder:
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                # Q's QR with diag(R) > 0 (else Q = (-Q)(-I) is a QR too); geqrf's diagonal holds R's, and
                # LAPACK leaves tau exactly 0 where it uses no reflection.
                A, tau = scriptc.geqrf(Q)
                A.diagonal(dim1=-2, dim2=-1).sign_()
                A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                extra = scriptc.randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype)
                Q = _make_orthogonal(scriptc.cat([Q, extra], dim=-1))
            self.base = Q
            neg_identity = -scriptc.eye(initial.shape[-2], initial.shape[-1], dtype=initial.dtype)
            return neg_identity.expand(initial.shape).clone()


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` (a matrix or batch of matrices) to be orthogonal. `orthogonal_map` is
    "matrix_exp" (default for square), "cayley" or "householder" (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
