"""Shared by the op-table modules of Python values (numbers, strings, lists, dicts, pymath): the
types a type rule sees, and registration of SCALAR ops (which scripted code calls, not eager code).

A SCALAR op's type rule gets each argument as Unknown(type) (or, from shape inference, a
constant) and returns the result type, or raises TypeError when the argument types do not fit
the overload (the script compiler then tries the next one)."""

from __future__ import annotations

from scriptc.types import (
    Any_,
    Bool,
    Complex,
    Float,
    Int,
    ListType,
    OptionalType,
    Scalar,
    TensorType,
    Type,
    type_of_constant,
)

from . import register
from .rules import Unknown
from .schema import SCALAR


def value_type(meta) -> Type:
    """The IR type of one argument as a type rule receives it."""
    if isinstance(meta, Unknown):
        return meta.type
    if isinstance(meta, TensorType):
        return meta
    if isinstance(meta, list):
        return ListType(value_type(meta[0]) if meta else Any_)
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):
        return TensorType()
    try:
        return type_of_constant(meta)
    except TypeError:
        return Any_


def types_of(*metas) -> list[Type]:
    return [value_type(m) for m in metas]


def python_op(schema: str, kernel, rule, doc: str = "", mutates: tuple = (), effects: bool = False) -> None:
    """Register one Python-value op: `kernel(*args)` (no array module), `rule(*types)` -> the result
    type (TypeError: these argument types are not this overload's). `mutates` names the arguments
    it changes in place; `effects`: it acts outside its arguments (print), so it is never dropped."""
    register(schema, SCALAR, lambda xp, *args: kernel(*args), shape=lambda *metas: rule(*types_of(*metas)),
             method=False, function=False, doc=doc, mutates=mutates, effects=effects)


def fixed(result: Type):
    """A type rule whose result does not depend on the arguments."""
    return lambda *types: result


def number_kind(*types: Type) -> Type:
    """int + int -> int, with a float -> float, with a complex -> complex (bool counts as int); a
    Scalar of unknown kind (x.item()) stays Scalar."""
    kinds = set()
    for t in types:
        if t in (Int, Bool):
            kinds.add(Int)
        elif t in (Float, Complex, Scalar):
            kinds.add(t)
        else:
            raise TypeError(f"not a number: {t}")
    for result in (Complex, Scalar, Float):
        if result in kinds:
            return result
    return Int


def element(t: Type) -> Type:
    if isinstance(t, ListType):
        return t.elem
    raise TypeError(f"not a list: {t}")


def same_lists(a: Type, b: Type) -> Type:
    if isinstance(a, ListType) and isinstance(b, ListType) and (a.elem == b.elem or isinstance(a.elem, TensorType)
                                                                and isinstance(b.elem, TensorType)):
        return a
    raise TypeError(f"lists of different types: {a} and {b}")


def optional(t: Type) -> Type:
    return t if isinstance(t, OptionalType) else OptionalType(t)

