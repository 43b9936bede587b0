"""torch.geqrf: the QR factorization in LAPACK's compact form, the input of orgqr/householder_product and ormqr.

The kernel is LAPACK's geqrf itself (numpy's qr(mode='raw') calls it; it returns the transposed,
column-major array), so `a` holds R on and above its diagonal and the Householder vectors below it,
and tau their scalars, as PyTorch returns them. PyTorch has no derivative for geqrf; none is recorded.
"""

from __future__ import annotations

from . import register
from .matrix import mT, out_type, torch_name
from .schema import OPAQUE


def _geqrf_kernel(xp, a):
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if a.dtype.kind not in "fc":
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{torch_name(a.dtype)}'")
    m, n = a.shape[-2:]
    if 0 in a.shape:
        return xp.array(a, copy=True), xp.zeros(a.shape[:-2] + (min(m, n),), dtype=a.dtype)
    packed, tau = xp.linalg.qr(a, mode="raw")
    return xp.ascontiguousarray(mT(packed)).astype(a.dtype, copy=False), tau.astype(a.dtype, copy=False)


def _geqrf_rule(a):
    if a.shape is None or not all(isinstance(d, int) for d in a.shape[-2:]):
        return out_type(a, a.shape), out_type(a, None)
    return out_type(a, a.shape), out_type(a, tuple(a.shape[:-2]) + (min(a.shape[-2:]),))


register("geqrf(self: Tensor) -> (Tensor, Tensor)", OPAQUE, _geqrf_kernel, shape=_geqrf_rule, complex_aware=True,
         result_names=("a", "tau"), doc="The QR factorization as LAPACK's geqrf packs it: R on and above the "
                                        "diagonal, Householder vectors below it, and their scalars tau.")
