"""scriptc.func (torch.func): function transforms - vmap, and the autodiff transforms grad,
grad_and_value, vjp, jvp, jacrev, jacfwd and hessian - and functional_call."""

from .functional_call import functional_call  # noqa: F401
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp  # noqa: F401
from .vmap import vmap  # noqa: F401

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functional_call"]
