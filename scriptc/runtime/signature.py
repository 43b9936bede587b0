"""A method's signature, and calls checked against it before any kernel runs.

Each input has the IR type the archive gives it. A tensor input takes a numpy array (or anything
with `__array__`: a scriptc or torch tensor) of its dtype, rank and fixed dims - dims named by a
symbol (`B`) take any size, one size for all the dims the symbol names - or a (nested) list of
numbers that converts to its dtype without changing kind; an Optional input may be None or left
out. A mismatch is a SignatureError naming the input, what it expects and what it got (and where a
trace baked the dim in, what baked it: input_dims), raised before the model runs (not a matmul
error from deep inside the executor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scriptc.errors import ArchiveError, CallError, SignatureError
from scriptc.ir.graph import Graph
from scriptc.types import (
    Complex,
    DeviceT,
    DictType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)

from .input_dims import check_baked_dims, check_shared_dims, shared_dims
from .values import Policy, match, tensor_difference

# The dtype a list of Python numbers becomes where the input's dtype is not known (torch.tensor's).
_LIST_DTYPES = {"b": np.bool_, "i": np.int64, "u": np.int64, "f": np.float32, "c": np.complex64}


NO_DEFAULT = object()  # (an input a call must give)


@dataclass(frozen=True)
class Parameter:
    """One input: its name and IR type, and for a tensor, the numpy dtype (None: any), rank (None:
    any) and the (dim, size) pairs its type fixes; `default`, what a call that leaves it out gives
    (the scripted method's default, which the archive's signature stores)."""
    name: str
    type: Type
    dtype: np.dtype | None = None
    rank: int | None = None
    fixed: tuple = ()
    default: Any = NO_DEFAULT

    @property
    def optional(self) -> bool:
        return isinstance(self.type, OptionalType)

    @staticmethod
    def of(name: str, t: Type, default: Any = NO_DEFAULT) -> "Parameter":
        tensor = t.elem if isinstance(t, OptionalType) else t
        if not isinstance(tensor, TensorType):
            return Parameter(name, t, default=default)
        shape = tensor.shape
        return Parameter(name, t, tensor.dtype.np if tensor.dtype is not None else None,
                         None if shape is None else len(shape),
                         () if shape is None else tuple((d, n) for d, n in enumerate(shape) if isinstance(n, int)),
                         default)


class Signature:
    """The inputs of a method (its module `self` aside), and bind(): a call's arguments checked
    and converted, in order."""

    def __init__(self, method: str, parameters: list[Parameter], baked_dims: tuple = ()):
        self.method = method
        self.parameters = parameters
        self.names = [p.name for p in parameters]
        self.baked_dims = baked_dims  # (input_dims.BakedDim): refused naming what baked them in
        self._shared_dims = shared_dims([p.type for p in parameters])
        self._positions = {p.name: i for i, p in enumerate(parameters)}
        # (position, dtype, rank, fixed dims) of plain tensor inputs: the common case, checked inline
        self._fast = [(i, p.dtype, p.rank, p.fixed) for i, p in enumerate(parameters)
                      if isinstance(p.type, TensorType) and p.dtype is not None]
        self._fast_only = len(self._fast) == len(parameters)

    @staticmethod
    def of_graph(method: str, graph: Graph, skip: int, names: list[str] | None = None,
                 baked_dims: tuple = (), defaults: dict | None = None) -> "Signature":
        """The signature of `graph`'s inputs after the first `skip`, named by `names` (the archive's
        signature) where given, else by the graph's value names; `baked_dims` are the input dims a
        trace baked in, `defaults` (name -> value) what the inputs a call leaves out are. A default
        its input's type does not take is an ArchiveError."""
        inputs = graph.inputs[skip:]
        names = names if names is not None and len(names) == len(inputs) else \
            [v.name or f"input{i}" for i, v in enumerate(inputs)]
        defaults = defaults or {}
        parameters = []
        for n, v in zip(names, inputs):
            default = defaults.get(n, NO_DEFAULT)
            if default is not NO_DEFAULT:
                problem, default = match(default, v.type, _INPUTS)
                if problem is not None:
                    raise ArchiveError(f"manifest.json: {method}'s input '{n}' has a default that is no {v.type} "
                                       f"({problem})")
            parameters.append(Parameter.of(n, v.type, default))
        return Signature(method, parameters, baked_dims)

    def bind(self, args: tuple, named: dict | None = None) -> list:
        """The call's inputs in order, each checked (and a list converted to an array); an omitted
        Optional input is None and one with a default its default. CallError (a TypeError) for a wrong
        count or name, SignatureError for a value that does not fit."""
        count = len(self.parameters)
        if not named and len(args) == count and self._fast_only:  # arrays that fit: checked in ~1 us
            for i, dtype, rank, fixed in self._fast:
                a = args[i]
                if type(a) is not np.ndarray or a.dtype != dtype or a.ndim != rank:
                    break
                shape = a.shape
                for d, n in fixed:
                    if shape[d] != n:
                        break
                else:
                    continue
                break
            else:
                if self._shared_dims:
                    check_shared_dims(self._shared_dims, self.names, args, self.method)
                return list(args)
        if len(args) > count:
            raise CallError(f"{self.method}() takes {count} inputs, got {len(args)}")
        values: list[Any] = list(args) + [_MISSING] * (count - len(args))
        for name, value in (named or {}).items():
            position = self._positions.get(name)
            if position is None:
                raise CallError(f"{self.method}() got an unexpected input '{name}' (inputs: "
                                f"{', '.join(self._positions)})")
            if values[position] is not _MISSING:
                raise CallError(f"{self.method}() got two values for input '{name}'")
            values[position] = value
        if len(args) < count:  # (some input is left out: its default, where it has one)
            values = [p.default if v is _MISSING and p.default is not NO_DEFAULT else v
                      for p, v in zip(self.parameters, values)]
        missing = [p.name for p, v in zip(self.parameters, values) if v is _MISSING and not p.optional]
        if missing:
            raise CallError(f"{self.method}() is missing input(s) {', '.join(repr(m) for m in missing)}")
        check_baked_dims(self.baked_dims, self.names, values, self.method)
        checked = [None if value is _MISSING else self.check(p, value) for p, value in zip(self.parameters, values)]
        check_shared_dims(self._shared_dims, self.names, checked, self.method)
        return checked

    def check(self, parameter: Parameter, value):
        """`value` as the input takes it, or SignatureError."""
        problem, converted = match(value, parameter.type, _INPUTS)
        if problem is not None:
            raise SignatureError(self.method, parameter.name, str(parameter.type), problem)
        return converted


_MISSING = object()


def describe(value) -> str:
    """A value as an error message names it: an array's dtype and shape, else its Python type."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name} array of shape {list(value.shape)}"
    return f"a {type(value).__name__}"


class _Inputs(Policy):
    """A call's input against its parameter's type: a list of numbers or anything with `__array__`
    is converted where a tensor is declared, a tuple where a list is (and back), numpy scalars to
    Python's, an int to a float, a ScalarType number (6) to its dtype; a complex, Device or dict is
    passed as it is (the model's ops check it)."""

    widens = True
    converts = True
    unchecked = frozenset({Complex, DeviceT})
    unknown_fits = True
    untyped_tuples_fit_any = False

    def tensor(self, value, t: TensorType) -> tuple[str | None, Any]:
        if isinstance(value, (list, tuple)):
            array = _from_list(value, t.dtype.np if t.dtype is not None else None)
            if isinstance(array, str):
                return array, None
        elif isinstance(value, np.ndarray):
            array = value
        elif hasattr(value, "__array__") and not isinstance(value, (np.generic, str, bytes)):
            try:
                array = np.asarray(value)
            except (TypeError, ValueError, RuntimeError) as exc:
                return f"{describe(value)} that is no array ({exc})", None
        else:
            return self.refuse(value, t), None
        difference = tensor_difference(array, t)
        return (None, array) if difference is None else (f"{describe(array)} {difference}", None)

    def refuse(self, value, t: Type) -> str:
        return describe(value)

    def wrong_length(self, value, t: TupleType) -> str:
        return f"{describe(value)} of {len(value)}"

    def in_item(self, problem: str, index: int) -> str:
        return f"element {index}: {problem}"

    def no_option(self, value, problems: list[str]) -> str:
        return describe(value)

    def dict_items(self, value: dict, t: DictType):
        return ()


_INPUTS = _Inputs()


def _from_list(value, dtype: np.dtype | None) -> np.ndarray | str:
    """A list of numbers as an array of `dtype` (what torch.tensor makes of it where None), or what
    is wrong: it is ragged or not numbers, or its numbers are of a kind the dtype would change
    (floats for an integer input)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # a ragged nesting
        return f"a list that is no array ({exc})"
    if array.dtype.kind not in "biufc":
        return f"a list of {'strings' if array.dtype.kind in 'US' else 'objects'}, not numbers"
    if dtype is None:
        return array.astype(_LIST_DTYPES[array.dtype.kind], copy=False)
    if not np.can_cast(array.dtype, dtype, "same_kind"):
        return f"a list of {array.dtype.name} values, which {dtype.name} cannot hold"
    return array.astype(dtype, copy=False)
