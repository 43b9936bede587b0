"""THE op table: every op scriptc knows, each declared once (DESIGN.md, "The op table").

`OPS` maps an op's full name (`add`, `max.dim`) to its OpDef; `overloads(name)`
lists the OpDefs that share a base name, in the order calls try them.
Eager dispatch, tracing, scripting, shape inference, autograd and the
codegens all read this table and nothing else.
"""

from __future__ import annotations

import warnings

from .schema import (  # noqa: F401  (re-exported: the vocabulary of the table)
    COMPARE,
    FACTORY,
    KEEP,
    KINDS,
    LAYER_NORM,
    NORMALIZE,
    OPAQUE,
    POINTWISE,
    PROMOTE,
    PROMOTE_FLOAT,
    RANDOM,
    REDUCE,
    REDUCTION,
    SCALAR,
    SHAPE,
    TO_BOOL,
    Arg,
    FusionTail,
    OpDef,
    Schema,
    SchemaError,
    parse_schema,
    parse_type,
)

# numpy reports a floating-point event in a kernel (log(0), sqrt(-1), exp overflowing, a NaN cast to
# an integer) as a RuntimeWarning from the kernel's line; torch computes the same inf or nan silently
# (T5's relative-position buckets take log(0) on every call). Only warnings raised from this package.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"scriptc\.ops(\.|$)")

OPS: dict[str, OpDef] = {}
_OVERLOADS: dict[str, list[OpDef]] = {}
# Other public names of an op family, as torch has them (arcsin is asin): {alias: base name}.
ALIASES: dict[str, str] = {}
# The in-place variants torch also offers as functions (`torch.relu_(x)`); the others are methods only.
INPLACE_FUNCTIONS = frozenset("""
    abs_ acos_ acosh_ addmv_ alpha_dropout_ asin_ asinh_ atan_ atanh_ ceil_ celu_ clamp_ clamp_max_ clamp_min_
    cos_ cosh_ deg2rad_ dropout_ erf_ erfc_ exp2_ exp_ expm1_ feature_alpha_dropout_ fill_
    floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ rad2deg_
    reciprocal_ relu_ round_ rrelu_ rsqrt_ selu_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ threshold_
    trunc_ xlogy_ zero_""".split())


def register(schema: str, kind: str, kernel, shape=None, inplace: bool = False,  # noqa: F811
             inplace_check=None, **fields) -> OpDef:
    """Declare one op. Pointwise ops get the broadcasting rule unless given one;
    `inplace=True` also declares the `name_` variant that writes into its first argument
    (`inplace_check(target)` raising where that variant refuses a target)."""
    from . import rules

    op = OpDef(parse_schema(schema), kind, kernel, shape, **fields)
    if op.shape is None:
        if kind != POINTWISE:
            raise SchemaError(f"op {op.name} needs a shape rule")
        op.shape = rules.pointwise(op)
    if op.kind == POINTWISE and op.scalar is None:
        raise SchemaError(f"pointwise op {op.name} needs a scalar expression")
    _add(op)
    if inplace:
        variant = OpDef(parse_schema(op.base_name + "_" + schema[len(op.base_name):]),
                        kind, _checked(kernel, inplace_check), rules.same_as(0), dtype_rule=op.dtype_rule, grad=op.grad,
                        save=op.save, saved_for=op.saved_for, aux=op.aux, inplace_of=op, doc=op.doc,
                        function=op.base_name + "_" in INPLACE_FUNCTIONS,
                        inplace_check=inplace_check, argument_check=op.argument_check)
        op.inplace = variant
        _add(variant)
    return op


def _checked(kernel, check):
    """`kernel` calling `check(target)` first (what compiled graphs run for an in-place variant)."""
    if check is None:
        return kernel

    def checked(xp, target, *args, **kwargs):
        check(target)
        return kernel(xp, target, *args, **kwargs)
    checked.__name__ = kernel.__name__
    return checked


def _add(op: OpDef) -> None:
    if op.name in OPS:
        raise SchemaError(f"op {op.name} declared twice")
    if op.base_name in ALIASES:
        raise SchemaError(f"op {op.name} is declared where an alias of {ALIASES[op.base_name]} stands")
    OPS[op.name] = op
    _OVERLOADS.setdefault(op.base_name, []).append(op)


def get(name: str) -> OpDef:
    """The op named `name`; KeyError with a clear message if there is none."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op '{name}'") from None


def overloads(base_name: str) -> list[OpDef]:
    """The OpDefs named `base_name` (or the ones it is an alias of), in the order calls try them."""
    return _OVERLOADS.get(ALIASES.get(base_name, base_name), [])


def alias(name: str, target: str) -> None:
    """Declare `name` another name of the ops called `target` (and `name_` of `target_` where that exists)."""
    for new, old in ((name, target), (name + "_", target + "_")):
        if old not in _OVERLOADS:
            continue
        if new in _OVERLOADS or new in ALIASES:
            raise SchemaError(f"alias {new} names an op that exists")
        ALIASES[new] = old
    if name not in ALIASES:
        raise SchemaError(f"alias {name} of unknown op {target}")


def all_ops() -> list[OpDef]:
    return list(OPS.values())


# Importing the modules fills the table (one module a line).
from . import pointwise  # noqa: E402,F401
from . import pointwise_logic  # noqa: E402,F401
from . import pointwise_math  # noqa: E402,F401
from . import reduction  # noqa: E402,F401
from . import scan  # noqa: E402,F401
from . import sorting  # noqa: E402,F401
from . import statistics  # noqa: E402,F401
from . import histogram  # noqa: E402,F401
from . import shape  # noqa: E402,F401
from . import joining  # noqa: E402,F401
from . import indexing  # noqa: E402,F401
from . import placement  # noqa: E402,F401
from . import special_ops  # noqa: E402,F401
from . import incomplete_gamma  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from . import factory  # noqa: E402,F401
from . import windows  # noqa: E402,F401
from . import random  # noqa: E402,F401
from . import rearrange  # noqa: E402,F401
from . import views  # noqa: E402,F401
from . import strided  # noqa: E402,F401
from . import scalar  # noqa: E402,F401
from . import products  # noqa: E402,F401
from . import einsum  # noqa: E402,F401
from . import diagonal  # noqa: E402,F401
from . import norms  # noqa: E402,F401
from . import linalg_solve  # noqa: E402,F401
from . import linalg_eigen  # noqa: E402,F401
from . import linalg_decomp  # noqa: E402,F401
from . import linalg_triangular  # noqa: E402,F401
from . import linalg_ldl  # noqa: E402,F401
from . import householder  # noqa: E402,F401
from . import matrix_exp  # noqa: E402,F401
from . import sparse  # noqa: E402,F401
from . import activation  # noqa: E402,F401
from . import dropout  # noqa: E402,F401
from . import complex  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from . import conv  # noqa: E402,F401
from . import padding  # noqa: E402,F401
from . import pooling  # noqa: E402,F401
from . import fractional_pool  # noqa: E402,F401
from . import normalization  # noqa: E402,F401
from . import spatial  # noqa: E402,F401
from . import resample  # noqa: E402,F401
from . import embedding  # noqa: E402,F401
from . import loss  # noqa: E402,F401
from . import numbers  # noqa: E402,F401
from . import strings  # noqa: E402,F401
from . import lists  # noqa: E402,F401
from . import dicts  # noqa: E402,F401
from . import pymath  # noqa: E402,F401
from . import generator_ops  # noqa: E402,F401
from . import threads  # noqa: E402,F401
from . import grad_regions  # noqa: E402,F401
from . import recurrent  # noqa: E402,F401
from . import packing  # noqa: E402,F401
from . import detection  # noqa: E402,F401


from . import quantized  # noqa: E402,F401
from . import real_only  # noqa: E402,F401  (after every op: it marks some of them)
from . import float_only  # noqa: E402,F401  (likewise)

from .aten_namespace import aten, torchvision  # noqa: E402,F401  (torch.ops.aten / .torchvision)
from .aten_namespace import find_namespace as __getattr__  # noqa: E402,F401  (torch.ops.<torch.library ns>)
