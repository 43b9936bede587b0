"""Runtime values of script classes (archives hold them without any Python class)."""

from __future__ import annotations


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
