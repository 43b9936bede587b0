"""Whether a runtime value (numpy array, Python number, list, script object, ...) has an IR type.

match() walks the type's structure once for every use; a Policy says how one use judges. The base
Policy is isinstance() in scripted code (value_has_type: for Union, Optional and Any values); the
archive's checks at load (validate.py) and a call's input checks (signature.py) subclass it for their
own messages, how strictly numbers count, and whether a value is converted to what the type says.

The walk recurses once per level of the type, whatever the value: the IR parser refuses types nested
past MAX_TYPE_NESTING (64) levels, so a hostile archive cannot reach the recursion limit through it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

import numpy as np

from scriptc.ir.parser import parse_type
from scriptc.types import (
    EnumType,
    EnumValue,
    Any_,
    Bool,
    Complex,
    DeviceT,
    DictType,
    DType,
    Float,
    Int,
    ListType,
    NoneType,
    InterfaceType,
    ObjectType,
    OptionalType,
    Str,
    TensorType,
    TupleType,
    Type,
    DTYPES_BY_NUMBER,
    SCALAR_TYPE_NUMBERS,
    UnionType,
    device,
    dtype,
)

from .objects import ScriptObject

# The classes of each scalar type's values, Python's and numpy's (a bool is never an int or a float).
_CLASSES: dict[Type, tuple[type, ...]] = {
    Bool: (bool, np.bool_), Int: (int, np.integer), Float: (float, np.floating), Complex: (complex,), Str: (str,),
    NoneType: (type(None),), DeviceT: (device,), DType: (dtype,)}
_BOOLS = (bool, np.bool_)
# What a float takes where ints widen to floats (a call's input, an attribute), as TorchScript's do.
_NUMBERS = (int, float, np.integer, np.floating)
# The Python class a numpy scalar becomes where the policy converts.
_PYTHON = {Bool: bool, Int: int, Float: float}
_UNFIT = "does not have the type"


class Policy:
    """How match() judges a value, and what it says when the value does not fit. The base judges as
    isinstance() does: scalars by their class (an int is no float), tensors of any dtype and shape,
    containers item by item, types the walk does not know never; it converts nothing."""

    widens = False                        # an int (or a numpy integer) passes for a float
    converts = False                      # a list and a tuple each pass for the other, come back as
                                          # the type says, and numpy scalars as Python's
    unchecked: frozenset[Type] = frozenset()  # scalar types whose values pass as they are
    checks_enums = True
    unknown_fits = False                  # Module, Future, Generator, Scalar
    untyped_tuples_fit_any = True         # Tuple[] (a bare `tuple`): any tuple, not only the empty one

    def tensor(self, value, t: TensorType) -> tuple[str | None, Any]:
        """(None, the value as the policy takes it) where `value` is a tensor of type `t`, else
        (what is wrong, None)."""
        fits = isinstance(value, np.ndarray) or hasattr(value, "_data") and hasattr(value, "grad_fn")
        return (None, value) if fits else (self.refuse(value, t), None)

    def refuse(self, value, t: Type) -> str:
        """What is wrong with `value`, which is not of `t`'s kind at all (a str for an int, a dict for
        a list)."""
        return _UNFIT

    def wrong_length(self, value, t: TupleType) -> str:
        return self.refuse(value, t)

    def in_item(self, problem: str, index: int) -> str:
        """What is wrong with a container whose item `index` (counted in dict_items' order) has
        `problem`."""
        return problem

    def no_option(self, value, problems: list[str]) -> str:
        """What is wrong with a value that fits none of a Union's options (`problems`, in order)."""
        return problems[0]

    def dict_items(self, value: dict, t: DictType) -> Iterable[tuple[Any, Type]]:
        """The (item, declared type) pairs of a dict that the policy checks."""
        return ((v, t.value) for v in value.values())


_ISINSTANCE = Policy()


def value_has_type(value, type_text: str) -> bool:
    """isinstance(value, type) for a type in its IR text form (checked when the graph was verified).
    Containers are judged by their items (an empty list is a list of anything)."""
    problem, _ = match(value, _parsed(type_text), _ISINSTANCE)
    return problem is None


_parsed = lru_cache(maxsize=256)(parse_type)


def match(value, t: Type, policy: Policy) -> tuple[str | None, Any]:
    """(None, the value as `policy` takes it) where `value` has IR type `t`, else (what is wrong, None)."""
    if t == Any_:
        return None, value
    if isinstance(t, OptionalType):
        return (None, None) if value is None else match(value, t.elem, policy)
    if isinstance(t, UnionType):
        problems = []
        for option in t.options:
            problem, taken = match(value, option, policy)
            if problem is None:
                return None, taken
            problems.append(problem)
        return policy.no_option(value, problems), None
    if isinstance(t, TensorType):
        return policy.tensor(value, t)
    if isinstance(t, (ListType, TupleType, DictType)):
        return _container(value, t, policy)
    classes = _CLASSES.get(t)
    if classes is not None:
        if t == DType and policy.converts and type(value) is int and value in DTYPES_BY_NUMBER:
            return None, DTYPES_BY_NUMBER[value]  # a dtype as TorchScript hands one out (6: float32)
        if t in policy.unchecked:
            return None, value
        if t is Float and policy.widens:
            classes = _NUMBERS
        if not isinstance(value, classes) or t is not Bool and isinstance(value, _BOOLS):
            return policy.refuse(value, t), None
        return None, _PYTHON[t](value) if policy.converts and t in _PYTHON else value
    if isinstance(t, InterfaceType):  # (an object of any class behind the interface)
        fits = isinstance(value, ScriptObject)
    elif isinstance(t, ObjectType):
        fits = isinstance(value, ScriptObject) and value.class_name == t.name
    elif isinstance(t, EnumType):
        fits = not policy.checks_enums or isinstance(value, EnumValue) and value.enum == t.name
    else:
        fits = policy.unknown_fits
    return (None, value) if fits else (policy.refuse(value, t), None)


def _container(value, t: ListType | TupleType | DictType, policy: Policy) -> tuple[str | None, Any]:
    if isinstance(t, DictType):
        if not isinstance(value, dict):
            return policy.refuse(value, t), None
        pairs: Iterable[tuple[Any, Type]] = policy.dict_items(value, t)
    else:
        kinds = (list, tuple) if policy.converts else list if isinstance(t, ListType) else tuple
        if not isinstance(value, kinds):
            return policy.refuse(value, t), None
        if isinstance(t, ListType):
            pairs = ((v, t.elem) for v in value)
        elif not t.elems and policy.untyped_tuples_fit_any:
            return None, value
        elif len(value) != len(t.elems):
            return policy.wrong_length(value, t), None
        else:
            pairs = zip(value, t.elems)
    taken = []
    for i, (item, item_type) in enumerate(pairs):
        problem, item = match(item, item_type, policy)
        if problem is not None:
            return policy.in_item(problem, i), None
        taken.append(item)
    if not policy.converts or isinstance(t, DictType):
        return None, value
    return None, list(taken) if isinstance(t, ListType) else tuple(taken)


def holds_dtype(t: Type) -> bool:
    """Whether a value of type `t` can hold a dtype (Any can hold anything)."""
    if t == DType or t == Any_:
        return True
    if isinstance(t, (ListType, OptionalType)):
        return holds_dtype(t.elem)
    inner = t.elems if isinstance(t, TupleType) else (t.key, t.value) if isinstance(t, DictType) else \
        t.options if isinstance(t, UnionType) else ()
    return any(holds_dtype(e) for e in inner)


def scalar_type_numbers(value):
    """A result as TorchScript hands it to Python: each dtype in it (in tuples, lists, dicts) as its
    ScalarType number, 6 for float32, as torch's scripted and loaded modules return one."""
    if isinstance(value, dtype):
        return SCALAR_TYPE_NUMBERS[value]
    if isinstance(value, (tuple, list)):
        items = [scalar_type_numbers(v) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {scalar_type_numbers(k): scalar_type_numbers(v) for k, v in value.items()}
    return value


def tensor_difference(array: np.ndarray, t: TensorType) -> str | None:
    """The first way an array differs from the dtype, rank and fixed dims of tensor type `t` (such as
    "(dim 1 is 16, not 12)"), or None: dims named by a symbol (`B`) take any size."""
    if t.dtype is not None and array.dtype != t.dtype.np:
        return f"(dtype {array.dtype.name}, not {t.dtype.np.name})"
    if t.shape is None:
        return None
    if array.ndim != len(t.shape):
        return f"({array.ndim} dims, not {len(t.shape)})"
    for d, n in enumerate(t.shape):
        if isinstance(n, int) and array.shape[d] != n:
            return f"(dim {d} is {array.shape[d]}, not {n})"
    return None
