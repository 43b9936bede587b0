"""Python source for a Graph, as torch.fx writes it: one line per node, each value freed after its last use."""

from __future__ import annotations

import builtins
import keyword
import math
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from scriptc.fx.names import is_from_torch, qualified_name, type_name
from scriptc.fx.node import Node

REFLECTABLE_MAGIC_METHODS = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}",
    "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
MAGIC_METHODS = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}", **REFLECTABLE_MAGIC_METHODS,
}
INPLACE_METHODS = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}
# A generic's origin as torch.fx names it: list[int] and List[int] both print as typing_List[int].
_TYPING_ORIGINS = {list: typing.List, dict: typing.Dict, set: typing.Set, frozenset: typing.FrozenSet,
                   tuple: typing.Tuple}
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARACTERS = re.compile("[^0-9a-zA-Z_]+")
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")
# Names a generated variable may not take unless it is that very object (keywords, builtins).
_RESERVED: dict[str, object] = {k: object() for k in keyword.kwlist}
_RESERVED.update(builtins.__dict__)


def builtin_globals() -> dict[str, Any]:
    """The names every generated function may use without a global of its own (torch's custom builtins)."""
    import scriptc
    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": scriptc, "device": scriptc.device}


def snake_case(name: str) -> str:
    """`mod.pascalCase` -> `mod.pascal_case`, as torch names nodes after their targets."""
    return _SNAKE.sub(r"_\1", name).lower()


class Namespace:
    """Unique Python identifiers, each tied to at most one object; never shadows a builtin or keyword."""

    def __init__(self) -> None:
        self._obj_to_name: dict[int, str] = {}
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: object | None) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARACTERS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if _RESERVED.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate


@dataclass
class PythonCode:
    """The source of a graph's function and the globals it must be executed with."""
    src: str
    globals: dict[str, Any] = field(default_factory=dict)


def format_target(base: str, target: str) -> str:
    """`self.layer1.0` -> `getattr(self.layer1, "0")`: attribute paths as valid Python."""
    result = base
    for part in target.split("."):
        result = f"{result}.{part}" if part.isidentifier() else f'getattr({result}, "{part}")'
    return result


class _Emitter:
    """Writes one graph's function; owns its globals table."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.globals: dict[str, Any] = {}
        self.wrapped: dict[str, None] = {}
        for name, value in builtin_globals().items():
            self.add_global(name, value)

    def add_global(self, name_hint: str, obj: Any) -> str:
        import scriptc
        if obj is not scriptc and callable(obj) and not isinstance(obj, type) and is_from_torch(obj):
            return qualified_name(obj)
        name = self.namespace.create_name(name_hint, obj)
        self.globals[name] = obj
        return name

    def type_expression(self, t) -> str:
        """A type annotation as generated code writes it: `torch.Tensor`, `int`,
        `typing_Tuple[torch.Tensor,int]`, `torch.Tensor|NoneType`, a global for other classes."""
        if t == ():
            return "()"
        if isinstance(t, types.UnionType):
            return "|".join(self.type_expression(arg) for arg in t.__args__)
        origin = getattr(t, "__origin__", None)
        if origin is not None:
            origin = _TYPING_ORIGINS.get(origin, origin)
            name = self.add_global(type_name(origin) if isinstance(origin, type) else repr(origin), origin)
            arguments = getattr(t, "__args__", ())
            return f"{name}[{','.join(self.type_expression(a) for a in arguments)}]" if arguments else name
        name = type_name(t)
        if name.startswith("torch.") or name == getattr(t, "__qualname__", None):
            return name
        return self.add_global(name, t)

    def repr_arg(self, arg) -> str:
        import scriptc
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            return self.add_global(qualified_name(type(arg)), type(arg)) + repr(tuple(arg))
        if isinstance(arg, scriptc.dtype):
            return f"torch.{arg.name if hasattr(arg, 'name') else str(arg).split('.')[-1]}"
        if isinstance(arg, scriptc.device):
            return f"device(type='{arg.type}')" if arg.index is None else \
                f"device(type='{arg.type}', index={arg.index})"
        if isinstance(arg, scriptc.Size):
            return f"torch.Size({list(arg)})"
        if isinstance(arg, scriptc.Tensor):
            return f"torch.Tensor(size={list(arg.shape)}, dtype={str(arg.dtype).split('.')[-1]})"
        if isinstance(arg, tuple):
            return "(" + ", ".join(self.repr_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr_arg(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{self.repr_arg(k)}: {self.repr_arg(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.repr_arg(arg.start)}, {self.repr_arg(arg.stop)}, {self.repr_arg(arg.step)})"
        if isinstance(arg, type) or (callable(arg) and hasattr(arg, "__name__")):
            return self.add_global(qualified_name(arg) if not isinstance(arg, type) else arg.__name__, arg)
        return repr(arg)

    def format_args(self, args, kwargs) -> str:
        return ", ".join([self.repr_arg(a) for a in args] + [f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items()])

    def statement(self, node: Node, root_module: str) -> str | None:
        """The Python statement computing one node (None for a placeholder that needs no rename)."""
        name = repr(node)
        if node.op == "placeholder":
            raw = node.target.replace("*", "")
            return f"{name} = {raw}" if raw != name else None
        if node.op == "call_method":
            return f"{name} = {format_target(self.repr_arg(node.args[0]), node.target)}" \
                   f"({self.format_args(node.args[1:], node.kwargs)})"
        if node.op == "call_module":
            return f"{name} = {format_target(root_module, node.target)}({self.format_args(node.args, node.kwargs)})"
        if node.op == "get_attr":
            return f"{name} = {format_target(root_module, node.target)}"
        if node.op == "output":
            return f"return {self.repr_arg(node.args[0])}"
        return self._call_function(node, name)

    def _call_function(self, node: Node, name: str) -> str:
        target = node.target
        operator_name = getattr(target, "__name__", "")
        if getattr(target, "__module__", "") == "_operator" and operator_name in MAGIC_METHODS:
            return f"{name} = {MAGIC_METHODS[operator_name].format(*(self.repr_arg(a) for a in node.args))}"
        if getattr(target, "__module__", "") == "_operator" and operator_name in INPLACE_METHODS:
            return (f"{INPLACE_METHODS[operator_name].format(*(self.repr_arg(a) for a in node.args))};  "
                    f"{name} = {self.repr_arg(node.args[0])}")
        global_name = self.add_global(qualified_name(target), target)
        if node.meta.get("is_wrapped", False):
            self.wrapped.setdefault(global_name)
        if (global_name == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str)
                and node.args[1].isidentifier()):
            return f"{name} = {format_target(self.repr_arg(node.args[0]), node.args[1])}"
        return f"{name} = {global_name}({self.format_args(node.args, node.kwargs)})"


def python_code(nodes: list[Node], root_module: str, namespace: Namespace, verbose: bool = False) -> PythonCode:
    """The `forward(self, ...)` function of a graph, laid out exactly as torch.fx lays it out."""
    emitter = _Emitter(namespace)
    last_uses: dict[Node, list[Node]] = {}
    seen: set[Node] = set()
    for node in reversed(nodes):
        for used in node.all_input_nodes:
            if used not in seen:
                seen.add(used)
                last_uses.setdefault(node, []).append(used)
    free_vars: list[str] = []
    body: list[str] = []
    if verbose:
        body.append("# No stacktrace found for following nodes\n")
    for node in nodes:
        if node.op == "placeholder":
            annotation = f" : {emitter.type_expression(node.type)}" if node.type is not None else ""
            default = f" = {emitter.repr_arg(node.args[0])}" if node.args else ""
            free_vars.append(f"{node.target}{annotation}{default}")
        line = emitter.statement(node, root_module)
        if line is None:
            continue
        if node.op == "output":
            body.append(line + "\n")
            continue
        freed = list(last_uses.get(node, []))
        if not node.users and node.op != "placeholder":
            freed.append(node)
        body.append(line + (f";  {' = '.join([repr(n) for n in freed] + ['None'])}\n" if freed else "\n"))
    if not any(n.op != "placeholder" for n in nodes):
        body.append("pass\n")
    output = next((n for n in reversed(nodes) if n.op == "output"), None)
    returns = f" -> {emitter.type_expression(output.type)}" if output is not None and output.type is not None else ""
    if "self" not in free_vars[:1]:
        free_vars.insert(0, "self")
    wrap_statements = ""
    if emitter.wrapped:
        from scriptc.fx._symbolic_trace import wrap
        wrap_name = emitter.add_global("wrap", wrap)
        wrap_statements = "\n".join(f'{wrap_name}("{name}")' for name in emitter.wrapped)
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    return PythonCode(f"\n{wrap_statements}\n\ndef forward({', '.join(free_vars)}){returns}:\n{code}", emitter.globals)
