"""The builtins table: how each Python builtin, each method of str/list/dict/number values and each
math-module function lowers in script.

The schemas and kernels live in the op table (scriptc/ops: numbers.py, strings.py, lists.py,
dicts.py, pymath.py, kind SCALAR), so that saved archives run them in scriptc.runtime. An op-table
op is named `<python name>.<overload>`: `upper.str`, `pop.list`, `get.dict`, `abs.scalar`,
`len.str`; `math.<fn>` for the math module. A call tries the SCALAR overloads of its name in
table order and takes the first whose schema accepts the arguments (a call with a tensor
argument tries the tensor op of the same name first). This table lists the names that lower
that way and the few that need their own lowering in the compiler (calls.py, `builtin_<name>`).
"""

from __future__ import annotations

import builtins
import collections
import math
import warnings

# Builtins that lower to op-table overloads of the same name (schema-matched).
BY_SCHEMA = frozenset({
    "abs", "all", "any", "bin", "chr", "divmod", "hex", "oct", "ord", "pow", "round", "sorted", "sum",
})

# Builtins the compiler lowers itself: their arguments are types, compile-time values, varargs, or
# they build containers whose type comes from their arguments.
SPECIAL = frozenset({
    "bool", "complex", "dict", "enumerate", "float", "getattr", "hasattr", "hash", "id", "int", "isinstance", "len",
    "list", "max", "min", "print", "range", "reversed", "slice", "str", "tuple", "type", "zip", "iter", "next",
    "warn",
})

# math-module functions lower to the op table's `math.<name>` overloads; constants are folded.
MATH_CONSTANTS = {name: getattr(math, name) for name in ("pi", "e", "inf", "nan", "tau")}


# torch.nn.modules.utils' tuple normalizers, builtins of TorchScript (aten::_pair ...): their lengths
NTUPLES = {"_single": 1, "_pair": 2, "_triple": 3, "_quadruple": 4}


def builtin_of(obj) -> str | None:
    """The name of the Python builtin `obj` is, when the table knows it."""
    if obj is warnings.warn:  # TorchScript's aten::warn
        return "warn"
    ntuple = getattr(obj, "_scriptc_ntuple", None)
    if ntuple is not None:
        return ntuple
    if obj is collections.OrderedDict:  # TorchScript's dicts keep insertion order: OrderedDict() is dict()
        return "dict"
    name = getattr(obj, "__name__", None)
    if name is None or getattr(builtins, name, None) is not obj:
        return None
    return name if name in BY_SCHEMA or name in SPECIAL else None


def math_function_of(obj) -> str | None:
    """`math.<name>` when `obj` is a function of the math module."""
    name = getattr(obj, "__name__", None)
    return f"math.{name}" if name is not None and getattr(math, name, None) is obj and callable(obj) else None
