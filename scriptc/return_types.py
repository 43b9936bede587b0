"""torch.return_types: the named tuples ops with several results return (`x.max(0).values`), one class per
op name shared by all its overloads, so `isinstance(r, torch.return_types.max)` holds and results pickle."""

from __future__ import annotations

from collections import namedtuple

_TYPES: dict[str, type] = {}


def _repr(self) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"torch.return_types.{type(self).__name__}(\n{fields})"


def result_type(name: str, fields: list[str]) -> type:
    """The return type called `name` with these fields, created on its first request."""
    cls = _TYPES.get(name)
    if cls is None:
        cls = namedtuple(name, fields, module=__name__)
        cls.__repr__ = _repr
        cls.n_fields = cls.n_sequence_fields = len(fields)
        cls.n_unnamed_fields = 0
        _TYPES[name] = cls
    return cls


def __getattr__(name: str) -> type:
    import scriptc.ops  # noqa: F401  (registering the ops creates their return types)

    if name in _TYPES:
        return _TYPES[name]
    from scriptc.torch_names import missing

    raise missing("torch.return_types", f"module '{__name__}'", name, __dir__())


def __dir__() -> list[str]:
    import scriptc.ops  # noqa: F401

    return sorted(set(globals()) | set(_TYPES))
