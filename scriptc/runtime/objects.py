"""Runtime values of script classes and Enums (archives hold them without any Python class)."""

from __future__ import annotations

from typing import Any


class ScriptObject:
    """An instance of a @jit.script class: its class name and attributes by name."""

    __slots__ = ("class_name", "attributes")

    def __init__(self, class_name: str, attributes: dict | None = None):
        self.class_name = class_name
        self.attributes = dict(attributes or {})

    def get(self, name: str):
        try:
            return self.attributes[name]
        except KeyError:
            raise AttributeError(f"'{self.class_name}' object has no attribute '{name}' (not set yet)") from None

    def set(self, name: str, value) -> None:
        self.attributes[name] = value

    def __repr__(self) -> str:
        return f"<{self.class_name} object>"


class EnumValue:
    """A member of an Enum: equal to another member of the same Enum with the same name."""

    __slots__ = ("enum", "name", "value")

    def __init__(self, enum: str, name: str, value: Any):
        self.enum, self.name, self.value = enum, name, value

    def __eq__(self, other) -> bool:
        return isinstance(other, EnumValue) and other.enum == self.enum and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.enum, self.name))

    def __repr__(self) -> str:
        return f"{self.enum}.{self.name}"
