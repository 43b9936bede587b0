"""Runtime values of script classes (archives hold them without any Python class)."""

from __future__ import annotations


class ScriptObject:
    """An instance of a @jit.script class: its class name and attributes by name."""

    __slots__ = ("class_name", "attributes", "types")

    def __init__(self, class_name: str, attributes: dict | None = None, types: dict | None = None):
        self.class_name = class_name
        self.attributes = dict(attributes or {})
        self.types = types or {}  # attribute name -> IR type, where the compiler knew them

    def get(self, name: str):
        try:
            return self.attributes[name]
        except KeyError:
            raise AttributeError(f"'{self.class_name}' object has no attribute '{name}' (not set yet)") from None

    def set(self, name: str, value) -> None:
        self.attributes[name] = value

    def __getattr__(self, name: str):
        """obj.field from Python (a scripted function returned the object)."""
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def __repr__(self) -> str:
        return f"<{self.class_name} object>"
