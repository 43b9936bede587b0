"""@dataclass classes in script: the methods the dataclasses module generates (without source) are
written out as TorchScript source, as torch's jit/_dataclass_impls does: __init__ assigning the
fields and calling __post_init__ with the InitVars, and the comparisons field by field."""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import re
import sys
import typing

_UNITS = itertools.count()
SYNTHESIZED = ("__init__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")


def is_generated(cls, name: str, fn) -> bool:
    """Whether `fn`, the method `name` of `cls`, is one the dataclasses module wrote (no source)."""
    return dataclasses.is_dataclass(cls) and name in SYNTHESIZED and \
        getattr(getattr(fn, "__code__", None), "co_filename", "") == "<string>"


def refuse_default_factories(cls) -> None:
    """torch's refusal of a dataclass field with a default_factory."""
    if dataclasses.is_dataclass(cls) and any(f.default_factory is not dataclasses.MISSING
                                             for f in dataclasses.fields(cls)):
        raise NotImplementedError("Default factory initializers are not supported in TorchScript dataclasses")


def is_init_only(cls, name: str, annotation) -> bool:
    """Whether the annotated name `name` of `cls` is no attribute: an InitVar of a dataclass (an
    __init__ argument only) or a ClassVar."""
    field = getattr(cls, dataclasses._FIELDS, {}).get(name)
    if field is not None and field._field_type is not dataclasses._FIELD:
        return True
    return isinstance(annotation, dataclasses.InitVar) or typing.get_origin(annotation) is typing.ClassVar


def generated_method(cls, name: str):
    """A Python function with readable source doing what the dataclass's method `name` does."""
    refuse_default_factories(cls)
    names = {}  # the annotations and defaults, bound to names the source uses

    def bind(value) -> str:
        key = f"_dc_{len(names)}"
        names[key] = value
        return key

    if name == "__init__":
        signature, body = _init(cls, bind)
    else:
        signature, body = f"(self, other: {bind(cls)}) -> bool", _comparison(cls, name)
    text = f"def {name}{signature}:\n" + "".join(f"    {line}\n" for line in body)
    filename = f"<scriptc dataclass {cls.__qualname__}.{name} {next(_UNITS)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    module = sys.modules.get(cls.__module__)
    scope = {**(vars(module) if module is not None else {}), **names}
    exec(compile(text, filename, "exec"), scope)  # noqa: S102  (one def, written above)
    fn = scope[name]
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    return fn


def _init(cls, bind) -> tuple[str, list]:
    init_vars, params = [], []
    for field in _init_parameters(cls):
        annotation = field.type
        if field._field_type is dataclasses._FIELD_INITVAR:
            init_vars.append(field.name)
            annotation = _inner_of_init_var(annotation)
        text = f"{field.name}: {annotation if isinstance(annotation, str) else bind(annotation)}"
        if field.default is not dataclasses.MISSING:
            text += f" = {bind(field.default)}"
        params.append(text)
    body = [f"self.{f.name} = {f.name}" for f in dataclasses.fields(cls) if f.init]  # (InitVars are no fields)
    if hasattr(cls, "__post_init__"):
        body.append(f"self.__post_init__({', '.join(init_vars)})")
    return f"(self, {', '.join(params)}) -> None" if params else "(self) -> None", body or ["pass"]


def _inner_of_init_var(annotation):
    """The type an InitVar annotation wraps (a string one, from `from __future__ import annotations`, too)."""
    if isinstance(annotation, str):
        match = re.fullmatch(r"\s*(?:\w+\.)*InitVar\[(.*)\]\s*", annotation)
        return match.group(1) if match else annotation
    return getattr(annotation, "type", annotation)


def _init_parameters(cls) -> list:
    """The dataclass's __init__ parameters in order: its init fields and its InitVars."""
    fields = getattr(cls, dataclasses._FIELDS)  # (InitVars are pseudo-fields, absent from fields())
    return [f for f in fields.values() if f.init and f._field_type is not dataclasses._FIELD_CLASSVAR]


def _comparison(cls, name: str) -> list:
    if name in ("__eq__", "__ne__"):
        inner, allow_eq, raise_on_none = [f"if val1 {'!=' if name == '__eq__' else '=='} val2: return False"], True, \
            False
    else:
        op = "<" if name in ("__lt__", "__le__") else ">"
        inner = [f"if val1 {op} val2: return True", f"elif val2 {op} val1: return False"]
        allow_eq, raise_on_none = name in ("__le__", "__ge__"), True
    body = []
    for field in dataclasses.fields(cls):
        if not field.compare:
            continue
        body += [f"val1 = self.{field.name}", f"val2 = other.{field.name}"]
        if _is_optional(field.type):
            body += ["if val1 is not None and val2 is not None:", *["    " + line for line in inner],
                     "elif (val1 is None) != (val2 is None):",
                     f"    raise TypeError('Cannot compare {cls.__name__} with None')" if raise_on_none
                     else "    return False"]
        else:
            body += inner
    return body + [f"return {allow_eq}"]


def _is_optional(annotation) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("Optional[", "typing.Optional[")) or "None" in annotation.split("|")
    return typing.get_origin(annotation) is typing.Union and type(None) in typing.get_args(annotation)
