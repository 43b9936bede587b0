"""torch.autograd: reverse-mode automatic differentiation.

The package by concern: engine (the graph of Nodes, backward, grad, create_graph), array_flow (the
table's formulas on arrays: first-order arithmetic), graph_formulas, formulas and pointwise_formulas
(the differentiable gradient formulas create_graph runs), function (torch.autograd.Function),
hooks (Tensor.register_hook, Node hooks), graph (saved_tensors_hooks), functional (jacobian, hessian, vjp,
jvp, hvp, vhp), forward_ad (dual tensors), anomaly_mode (detect_anomaly), gradcheck. Grad modes live in scriptc/grad_mode.py.
"""

from scriptc.autograd import anomaly_mode, function, functional, graph  # noqa: F401
from scriptc.autograd import profiler  # noqa: F401
from scriptc.autograd import forward_ad  # noqa: F401
from scriptc.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from scriptc.autograd.engine import Node, backward, grad
from scriptc.autograd.function import Function
from scriptc.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from scriptc.autograd.variable import Variable
from scriptc.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from scriptc.torch_names import missing_attribute as _missing_attribute

# Reached from elsewhere in scriptc: eager dispatch records Nodes, utils.checkpoint builds its own.
from scriptc.autograd.engine import (  # noqa: F401
    _flat_inputs,
    _gradient,
    _is_checkpoint_valid,
    edge_of,
    record,
    watch_output,
)
from scriptc.grad_mode import _mode  # noqa: F401
from scriptc import grad_mode  # noqa: F401,E402

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "Node",
           "Function", "detect_anomaly", "set_detect_anomaly", "Variable"]

__getattr__ = _missing_attribute("torch.autograd", __name__)
