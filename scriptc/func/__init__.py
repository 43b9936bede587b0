"""scriptc.func (torch.func): function transforms - vmap, and the autodiff transforms grad,
grad_and_value, vjp, jvp, jacrev, jacfwd and hessian."""

from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp  # noqa: F401
from .vmap import vmap  # noqa: F401

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]
