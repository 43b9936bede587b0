"""scriptc.func (torch.func): function transforms - vmap, and the autodiff transforms grad,
grad_and_value, vjp, jvp, linearize, jacrev, jacfwd and hessian - functional_call, and the
ensembling helpers stack_module_state and replace_all_batch_norm_modules_."""

from .functional_call import functional_call  # noqa: F401
from .module_state import replace_all_batch_norm_modules_, stack_module_state  # noqa: F401
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp  # noqa: F401
from .vmap import vmap  # noqa: F401

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "functional_call",
           "stack_module_state", "replace_all_batch_norm_modules_"]
