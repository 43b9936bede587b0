"""TorchScript's types in the compiler: annotations (AST or Python typing objects) to IR types,
unification at control-flow joins, assignability, and what isinstance() can decide statically."""

from __future__ import annotations

import builtins
import enum
import typing

from scriptc.types import (
    Any_,
    Bool,
    Complex,
    DeviceT,
    DictType,
    DType,
    EnumType,
    Float,
    FutureType,
    GeneratorT,
    Int,
    InterfaceType,
    ListType,
    ModuleType,
    NamedTupleType,
    NoneType,
    ObjectType,
    OptionalType,
    Scalar,
    ScalarType,
    Str,
    TensorType,
    TupleType,
    Type,
    UnionType,
)

NUMBERS = (Int, Float, Bool)


def make_union(types) -> Type:
    """Union of `types`, flattened and deduplicated; Optional[T] when None is one of two members."""
    flat: list[Type] = []
    for t in types:
        members = t.options if isinstance(t, UnionType) else (
            (t.elem, NoneType) if isinstance(t, OptionalType) else (t,))
        for m in members:
            for sub in (m.options if isinstance(m, UnionType) else (m,)):
                if sub not in flat:
                    flat.append(sub)
    if any(t == Any_ for t in flat):
        return Any_
    if NoneType in flat and len(flat) > 1:
        rest = [t for t in flat if t != NoneType]
        return OptionalType(rest[0] if len(rest) == 1 else UnionType(tuple(rest)))
    return flat[0] if len(flat) == 1 else UnionType(tuple(flat))


def members(t: Type) -> list[Type]:
    """The alternatives a Union or Optional value may hold (a plain type is its only member; a
    Scalar - what Tensor.item() gives - is an int, a float, a bool or a complex)."""
    if isinstance(t, OptionalType):
        return members(t.elem) + [NoneType]
    if isinstance(t, UnionType):
        return list(t.options)
    if t == Scalar:
        return [Int, Float, Bool, Complex]
    return [t]


def assignable(actual: Type, declared: Type) -> bool:
    """Whether a value of type `actual` may be stored where `declared` is annotated (TorchScript's
    subtyping: no int -> float conversion; containers are invariant except in their Optional-ness)."""
    if actual == declared or declared == Any_:
        return True
    if isinstance(actual, UnionType) or isinstance(actual, OptionalType) and isinstance(declared, UnionType):
        return all(assignable(m, declared) for m in members(actual))
    if isinstance(declared, OptionalType):
        return actual == NoneType or assignable(actual, declared.elem) or (
            isinstance(actual, OptionalType) and assignable(actual.elem, declared.elem))
    if isinstance(declared, UnionType):
        return any(assignable(actual, m) for m in declared.options)
    if isinstance(declared, TensorType):
        return isinstance(actual, TensorType)
    if declared == Scalar:
        return actual in NUMBERS
    if isinstance(declared, TupleType) and isinstance(actual, TupleType):
        if isinstance(declared, NamedTupleType) and (not isinstance(actual, NamedTupleType) or
                                                      actual.name != declared.name):
            return False
        return len(actual.elems) == len(declared.elems) and all(
            assignable(a, d) for a, d in zip(actual.elems, declared.elems))
    if isinstance(declared, ListType) and isinstance(actual, ListType):
        return declared.elem == Any_ or _same_container_elem(actual.elem, declared.elem)
    if isinstance(declared, DictType) and isinstance(actual, DictType):
        return _same_container_elem(actual.key, declared.key) and _same_container_elem(actual.value, declared.value)
    if isinstance(declared, FutureType) and isinstance(actual, FutureType):
        return assignable(actual.elem, declared.elem)
    if isinstance(declared, ModuleType) and isinstance(actual, ModuleType):
        return True
    return False


def _same_container_elem(actual: Type, declared: Type) -> bool:
    if isinstance(actual, TensorType) and isinstance(declared, TensorType):
        return True
    return actual == declared


def unify(a: Type, b: Type) -> Type | None:
    """The type both a and b are at a control-flow join (TorchScript's unifyTypes), or None."""
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return TensorType(a.dtype if a.dtype == b.dtype else None, a.shape if a.shape == b.shape else None)
    if Scalar in (a, b) and a in NUMBERS + (Complex, Scalar) and b in NUMBERS + (Complex, Scalar):
        return Scalar
    if a == NoneType or b == NoneType:
        other = b if a == NoneType else a
        return other if isinstance(other, OptionalType) else make_union([other, NoneType])
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        inner = unify(a.elem if isinstance(a, OptionalType) else a, b.elem if isinstance(b, OptionalType) else b)
        return None if inner is None else make_union([inner, NoneType])
    if isinstance(a, ListType) and isinstance(b, ListType):
        elem = unify(a.elem, b.elem)
        return ListType(elem) if elem is not None and (elem == a.elem or elem == b.elem or
                                                       isinstance(elem, TensorType)) else None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        if any(e is None for e in elems):
            return None
        if isinstance(a, NamedTupleType) and a == b:
            return a
        return TupleType(tuple(elems))
    if isinstance(a, DictType) and isinstance(b, DictType):
        key, value = unify(a.key, b.key), unify(a.value, b.value)
        return DictType(key, value) if key == a.key and value is not None and key is not None else None
    if isinstance(a, UnionType) or isinstance(b, UnionType):
        merged = make_union([a, b])
        return merged
    if isinstance(a, ModuleType) and isinstance(b, ModuleType):
        return ModuleType()
    return None


# --- annotations ----------------------------------------------------------------------------------

_PLAIN = {int: Int, float: Float, bool: Bool, str: Str, complex: Complex, type(None): NoneType, None: NoneType,
          typing.Any: Any_}
_NAMES = {"int": Int, "float": Float, "bool": Bool, "str": Str, "complex": Complex, "None": NoneType,
          "NoneType": NoneType, "Any": Any_, "Tensor": TensorType(), "Device": DeviceT, "device": DeviceT,
          "dtype": DType, "number": Scalar}
GENERICS = ("List", "list", "Dict", "dict", "Tuple", "tuple", "Optional", "Union", "Final", "Future", "Await",
            "_Await", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3")


class AnnotationError(Exception):
    """An annotation that names no TorchScript type; the compiler reports it at the annotation."""


# generics that mean nothing without their element types (a bare `-> Tuple`, `x: Optional`)
NEED_ELEMENTS = ("List", "Dict", "Tuple", "Optional", "Union")
_BARE_GENERICS = {typing.List: "List", typing.Dict: "Dict", typing.Tuple: "Tuple", typing.Optional: "Optional",
                  typing.Union: "Union"}


def missing_elements(name: str) -> AnnotationError:
    """torch's refusal of a generic annotation given without its element types."""
    if name == "Dict":
        return AnnotationError("Attempted to use Dict without contained types. Please add contained type, e.g. "
                               "Dict[int, int]")
    return AnnotationError(f"Attempted to use {name} without a contained type. Please add a contained type, e.g. "
                           f"{name}[int]")


def python_type(obj, resolve_class=None) -> Type:
    """The IR type a Python annotation object stands for (int, typing.List[int], a script class...).
    `resolve_class(cls)` turns user classes (script classes, NamedTuples, Enums) into types."""
    import scriptc
    from scriptc.nn import Module

    if obj in _PLAIN if _hashable(obj) else False:
        return _PLAIN[obj]
    if isinstance(obj, str):
        if obj in _NAMES:
            return _NAMES[obj]
        if obj in NEED_ELEMENTS:
            raise missing_elements(obj)
        raise AnnotationError(f"unknown type annotation '{obj}'")
    if _hashable(obj) and obj in _BARE_GENERICS:
        raise missing_elements(_BARE_GENERICS[obj])
    if obj is scriptc.Tensor:
        return TensorType()
    if obj is scriptc.device:
        return DeviceT
    if obj is scriptc.dtype:
        return DType
    if obj is scriptc.Generator:
        return GeneratorT
    origin = typing.get_origin(obj)
    if origin is not None:
        args = typing.get_args(obj)
        return generic_type(_origin_name(origin, obj), [python_type(a, resolve_class) for a in args
                                                          if a is not Ellipsis], len(args))
    if obj in (list, dict, tuple):
        raise AnnotationError(f"'{obj.__name__}' needs its element types ({obj.__name__.capitalize()}[...])")
    if isinstance(obj, type) and issubclass(obj, Module) and not getattr(obj, "_scriptc_interface", False):
        return ModuleType()
    if isinstance(obj, type) and resolve_class is not None:
        resolved = resolve_class(obj)
        if resolved is not None:
            return resolved
    name = getattr(obj, "__name__", None) or repr(obj)
    raise AnnotationError(f"unknown type annotation '{name}'")


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _origin_name(origin, obj) -> str:
    if origin in (list, typing.List):
        return "List"
    if origin in (dict, typing.Dict):
        return "Dict"
    if origin in (tuple, typing.Tuple):
        return "Tuple"
    if origin is typing.Union:
        return "Union"
    if origin is typing.Final:
        return "Final"
    name = getattr(origin, "__name__", "") or str(origin)
    if name == "UnionType" or str(obj).count("|"):
        return "Union"
    return name.split(".")[-1]


def generic_type(head: str, args: list[Type], count: int | None = None) -> Type:
    """List[T], Dict[K, V], Tuple[...], Optional[T], Union[...], Final[T], Future[T] from their arguments."""
    # torch's BroadcastingListN[T] (a T or N of them, as F.max_pool2d's kernel_size) is a List[T] here
    head = {"list": "List", "dict": "Dict", "tuple": "Tuple", "BroadcastingList1": "List",
            "BroadcastingList2": "List", "BroadcastingList3": "List"}.get(head, head)
    if head == "List" and len(args) == 1:
        return ListType(args[0])
    if head == "Dict" and len(args) == 2:
        key = args[0]
        if not (key in (Str, Int, Float, Bool, Complex) or isinstance(key, TensorType)):
            raise AnnotationError(f"Dict keys must be str, int, float, bool, complex or Tensor, not {key}")
        return DictType(key, args[1])
    if head == "Tuple":
        return TupleType(tuple(args))
    if head == "Optional" and len(args) == 1:
        return make_union([args[0], NoneType])
    if head == "Union" and args:
        return make_union(args)
    if head == "Final" and len(args) == 1:
        return args[0]
    if head in ("Future", "Await", "_Await") and len(args) == 1:  # (an Await is a Future in scripted code)
        return FutureType(args[0])
    raise AnnotationError(f"unknown generic type '{head}' with {count if count is not None else len(args)} "
                          f"argument(s)")


def annotations_of(cls) -> dict:
    """A class's attribute annotations, string ones resolved in its module (from __future__ import
    annotations), as typing objects."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a name typing cannot resolve: the raw annotations say what they can
        return dict(getattr(cls, "__annotations__", {}))


def named_type(name: str) -> Type | None:
    """The type a bare name in an annotation means without looking it up (`Tensor`, `int`, ...)."""
    return _NAMES.get(name)


def enum_type(cls) -> EnumType:
    """The type of an Enum class's members (their values must share one type)."""
    values = [m.value for m in cls]
    kinds = {type(v) for v in values}
    if len(kinds) > 1:  # torch's words
        raise AnnotationError(f"Could not unify type list since element {len(values) - 1} of type "
                              f"{type(values[-1]).__name__} did not match the types before it "
                              f"(Enum {cls.__name__}: all values must be of one type)")
    if kinds and next(iter(kinds)) not in (int, float, str):
        kind = next(iter(kinds))
        name = "Tensor" if hasattr(kind, "shape") and hasattr(kind, "dtype") else kind.__name__
        raise AnnotationError(f"Cannot create Enum with value type '{name}'")
    from scriptc.jit.arguments import ENUM_CLASSES

    ENUM_CLASSES[cls.__qualname__] = cls  # (results and messages name the class)
    return EnumType(cls.__qualname__, _PLAIN[next(iter(kinds))])


def is_enum_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, enum.Enum)


def is_namedtuple_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def static_isinstance(actual: Type, target: Type) -> bool | None:
    """True/False when isinstance(value of `actual`, `target`) is known at compile time, else None
    (a Union or Optional that may or may not hold a `target`)."""
    options = members(actual)
    hits = [_type_is(m, target) for m in options]
    if all(h is True for h in hits):
        return True
    if all(h is False for h in hits):
        return False
    return None


def _type_is(actual: Type, target: Type) -> bool | None:
    if target == Any_:
        return True
    if actual == Any_:
        return None  # decided at run time
    if isinstance(target, (UnionType, OptionalType)):
        results = [_type_is(actual, t) for t in members(target)]
        if any(r is True for r in results):
            return True
        return False if all(r is False for r in results) else None
    if isinstance(target, TensorType):
        return isinstance(actual, TensorType)
    if isinstance(actual, InterfaceType) and isinstance(target, ObjectType) and actual != target:
        return None  # (a class interface's value is an object of any class behind it: checked at run time)
    if isinstance(target, ListType):
        if not isinstance(actual, ListType):
            return False
        return target.elem == Any_ or actual.elem == target.elem or (
            isinstance(actual.elem, TensorType) and isinstance(target.elem, TensorType))
    if isinstance(target, DictType):
        if not isinstance(actual, DictType):
            return False
        return actual.key == target.key and (actual.value == target.value or target.value == Any_)
    if isinstance(target, TupleType):
        if not isinstance(actual, TupleType):
            return False
        if not target.elems:
            return True
        return len(actual.elems) == len(target.elems) and all(
            _type_is(a, t) is True for a, t in zip(actual.elems, target.elems))
    if isinstance(target, FutureType) and target.elem == Any_:
        return isinstance(actual, FutureType)
    return actual == target


def builtin_type_name(obj) -> str | None:
    """'int', 'list', ... when obj is the builtin type of that name (isinstance's second argument)."""
    if isinstance(obj, type) and getattr(builtins, obj.__name__, None) is obj:
        return obj.__name__
    return None


def scalar_of_python(value) -> ScalarType | None:
    """The IR scalar type of a Python scalar's class, or None for other values."""
    if isinstance(value, bool):
        return Bool
    if isinstance(value, int):
        return Int
    if isinstance(value, float):
        return Float
    if isinstance(value, complex):
        return Complex
    if isinstance(value, str):
        return Str
    return None


def object_type_name(cls) -> str:
    return ObjectType(cls.__qualname__).name


def example_types(tuples: list) -> list:
    """Per parameter position, the type that every example argument there has (None where they
    disagree or say nothing: the parameter stays a Tensor)."""
    out = []
    for position in range(max(len(t) for t in tuples)):
        found = None
        for example in tuples:
            if position >= len(example):
                continue
            t = type_of_example(example[position])
            if t is None:
                found = None
                break
            found = t if found is None else (unify(found, t) if found != NoneType and t != NoneType else
                                             make_union([found, t]))
            if found is None:
                break
        out.append(found if found != NoneType else None)
    return out


def type_of_example(value) -> Type | None:
    """The script type of an example argument (None for a value that names no type: [] or {})."""
    if value is None:
        return NoneType
    if isinstance(value, enum.Enum):
        return enum_type(type(value))
    for kind, t in ((bool, Bool), (int, Int), (float, Float), (complex, Complex), (str, Str)):
        if type(value) is kind:
            return t
    if hasattr(value, "_data") and hasattr(value, "dtype"):
        return TensorType()
    if isinstance(value, list):
        items = [type_of_example(v) for v in value]
        if not items or any(t is None for t in items):
            return None
        elem = items[0]
        for t in items[1:]:
            elem = unify(elem, t)
            if elem is None:
                return None
        return ListType(elem)
    if isinstance(value, tuple):
        items = [type_of_example(v) for v in value]
        return None if any(t is None for t in items) else TupleType(tuple(items))
    if isinstance(value, dict):
        if not value:
            return None
        keys = {type_of_example(k) for k in value}
        values = [type_of_example(v) for v in value.values()]
        if len(keys) != 1 or None in keys or any(v is None or v != values[0] for v in values):
            return None
        return DictType(next(iter(keys)), values[0])
    return None
