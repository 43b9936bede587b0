"""LKJCholesky (torch.distributions.LKJCholesky)."""

from __future__ import annotations

import math

import scriptc
from scriptc.tensors import Size

from . import constraints
from .beta import Beta
from .distribution import Distribution, as_size
from .utils import broadcast_all, finfo

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors of dim x dim correlation matrices: the density of
    the correlation matrix L L^T is proportional to det(L L^T)^(concentration - 1). Samples use the
    onion method (Lewandowski, Kurowicka & Joe, 2009): each row a Beta-distributed radius on a
    uniformly random direction."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = scriptc.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = scriptc.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        return self._expanded(LKJCholesky, batch_shape, _instance, dim=self.dim,
                              concentration=self.concentration.expand(batch_shape),
                              _beta=self._beta.expand(tuple(batch_shape) + (self.dim,)))

    def sample(self, sample_shape=()):
        with scriptc.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = scriptc.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere[..., 0, :].fill_(0.0)  # the first row is (1, 0, ..., 0): its 0/0 norm is replaced
            w = y.sqrt() * u_hypersphere
            diag_elems = (1 - (w ** 2).sum(-1)).clamp(min=float(finfo(w.dtype).tiny)).sqrt()
            return w + diag_elems.diag_embed()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - scriptc.arange(2, self.dim + 1)
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize_term = 0.5 * dm1 * math.log(math.pi) + scriptc.mvlgamma(alpha - 0.5, dm1) - alpha.lgamma() * dm1
        return unnormalized_log_pdf - normalize_term
