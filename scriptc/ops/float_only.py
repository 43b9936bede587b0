"""The ops torch refuses for a bool or integer input, with the error torch raises (torch 2.13, CPU).

numpy computes all of these on any dtype; torch's kernels are compiled for the floating types (and some
for the integers but not bool), so eager calls and the interpreter check here before the kernel runs
(ops/execute.py) and raise what torch raises rather than compute what torch refuses. An entry is
(refused dtypes, error): the error is the name of torch's kernel (NotImplementedError
'"<kernel>" not implemented for 'Long'') or (exception type, message), `{dtype}` in the message being
torch's name of the input's dtype. The first tensor operand decides, except for the ops in
EVERY_OPERAND, which torch refuses whichever operand has the dtype.
"""

from __future__ import annotations

import numpy as np

from . import overloads

BOOL = frozenset({"bool"})
INTEGERS = frozenset({"uint8", "int8", "int16", "int32", "int64"})
INTEGRAL = BOOL | INTEGERS
# torch's avg_pool kernels take int64 but no other integer type
_AVG_POOL = INTEGRAL - {"int64"}
_HARDTANH = (RuntimeError, "Bool inputs not supported for hardtanh")

FLOAT_ONLY = {
    "abs": (BOOL, "abs_cpu"), "floor": (BOOL, "floor_vml_cpu"), "ceil": (BOOL, "ceil_vml_cpu"),
    "trunc": (BOOL, "trunc_vml_cpu"), "round": (BOOL, "round_vml_cpu"),
    "neg": (BOOL, (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                 "to invert a mask, use the `~` or `logical_not()` operator instead.")),
    "relu": (BOOL, (RuntimeError, "Boolean inputs not supported for relu")),
    "hardtanh": (BOOL, _HARDTANH), "relu6": (BOOL, _HARDTANH),
    "threshold": (BOOL, "threshold_cpu"),
    "argmax": (BOOL, (RuntimeError, "argmax(): does not support bool input")),
    "argmin": (BOOL, (RuntimeError, "argmin(): does not support bool input")),
    "topk": (BOOL, (RuntimeError, "topk does not support bool dtypes on CPU")),
    "kthvalue": (BOOL, "kthvalue_cpu"), "median": (BOOL, "median_cpu"), "nanmedian": (BOOL, "median_cpu"),
    "isin": (BOOL, (RuntimeError, "Unsupported input type encountered for isin(): {dtype}")),
    "mvlgamma": (BOOL, (RuntimeError, "The input tensor may not be a boolean tensor.")),
    "dist": (BOOL, (RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.")),
    "cross": (BOOL, "cross"),
    "mm": (BOOL, "addmm_impl_cpu_"), "matmul": (BOOL, "addmm_impl_cpu_"), "linear": (BOOL, "addmm_impl_cpu_"),
    "elu": (INTEGRAL, "elu_cpu"), "selu": (INTEGRAL, "elu_cpu"), "celu": (INTEGRAL, "elu_cpu"),
    "leaky_relu": (INTEGRAL, "leaky_relu_cpu"), "rrelu": (INTEGRAL, "leaky_relu_cpu"),
    "gelu": (INTEGRAL, "GeluKernelImpl"), "silu": (INTEGRAL, "silu_cpu"), "mish": (INTEGRAL, "mish_cpu"),
    "softplus": (INTEGRAL, "softplus_cpu"), "hardswish": (INTEGRAL, "hardswish_cpu"),
    "hardsigmoid": (INTEGRAL, "hardsigmoid_cpu"), "logsigmoid": (INTEGRAL, "log_sigmoid_cpu"),
    "softshrink": (INTEGRAL, "softshrink_check"), "hardshrink": (INTEGRAL, "hardshrink_cpu"),
    "glu": (INTEGRAL, "glu_cpu"), "prelu": (INTEGRAL, "prelu_cpu"),
    "layer_norm": (INTEGRAL, "LayerNormKernelImpl"), "group_norm": (INTEGRAL, "GroupNormKernelImpl"),
    "batch_norm": (INTEGRAL, "batch_norm"), "instance_norm": (INTEGRAL, "batch_norm"),
    "normal": (INTEGRAL, "normal_kernel_cpu"), "poisson": (INTEGRAL, "poisson_cpu"),
    "max_pool1d": (INTEGRAL, "max_pool1d_impl"), "max_pool2d": (BOOL, "max_pool2d"), "max_pool3d": (BOOL, "max_pool3d"),
    "conv2d": (BOOL, "slow_conv2d_cpu"), "conv3d": (BOOL, "compute_columns3d"),
    "adaptive_max_pool1d": (INTEGRAL, "adaptive_max_pool2d"),
    "adaptive_avg_pool1d": (INTEGRAL, (RuntimeError, "mean(): could not infer output dtype. Input dtype must be "
                                                     "either a floating point or complex dtype. Got: {dtype}")),
    "avg_pool1d": (_AVG_POOL, "avg_pool2d"), "avg_pool2d": (_AVG_POOL, "avg_pool2d"),
    "avg_pool3d": (BOOL, "avg_pool3d_out_frame"),
}


EVERY_OPERAND = frozenset({"isin", "dist"})

def _entry_of(op, refused: frozenset, error, every_operand: bool) -> tuple:
    """OpDef.float_only: the refused dtypes as numpy dtypes (compared on every call: a dtype's .name is
    slow), the error, and the arguments checked - the first tensor operand (torch.normal takes an
    integer std with a floating mean), or every one."""
    return (frozenset(np.dtype(name) for name in refused), error,
            op.promote_args if every_operand else op.promote_args[:1])


for _name, (_refused, _error) in FLOAT_ONLY.items():
    for _op in overloads(_name):
        _op.float_only = _entry_of(_op, _refused, _error, _name in EVERY_OPERAND)
        if _op.inplace is not None:
            _op.inplace.float_only = _entry_of(_op.inplace, _refused, _error, _name in EVERY_OPERAND)
