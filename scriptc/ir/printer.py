"""The IR's text form (TorchScript-like, read back by parser.py) and `.code`, a Python-like rendering."""

from __future__ import annotations

import json
import math
import re

import numpy as np

from scriptc.types import EnumValue, device, dtype

from .graph import Block, Graph, Node, Value
from .nesting import deep_recursion

_NAME_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Namer:
    """Stable printed names: a value's name hint when free, else the next number."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def __call__(self, v: Value) -> str:
        key = id(v)
        if key in self.names:
            return self.names[key]
        hint = v.name
        if hint and _NAME_OK.match(hint):
            name, n = hint, 0
            while name in self.taken:
                n += 1
                name = f"{hint}.{n}"
        else:
            while str(self.counter) in self.taken:
                self.counter += 1
            name = str(self.counter)
            self.counter += 1
        self.taken.add(name)
        self.names[key] = name
        return name


# What str(graph) shows of an array constant: its values up to this many, past that only its dtype,
# shape and count (a frozen model's weights would print as millions of numbers, as TorchScript's
# printer avoids with `<Tensor>`). print_graph writes every value by default: text that parses back.
SHOWN_VALUES = 64


def format_attr(value, max_values: int | None = None) -> str:
    """An attribute value in the IR's literal syntax (parsed back by parser.parse_attr_value); arrays
    of more than `max_values` values show their count instead (text the parser refuses)."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (complex, np.complexfloating)):
        return f"complex({format_attr(value.real)}, {format_attr(value.imag)})"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, EnumValue):
        return f"Enum({json.dumps(value.enum)}, {json.dumps(value.name)}, {format_attr(value.value)})"
    if isinstance(value, dtype):
        return value.name
    if isinstance(value, device):
        return f'Device("{value}")'
    if isinstance(value, list):
        return "[" + ", ".join(format_attr(v, max_values) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(format_attr(v, max_values) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, np.ndarray):
        head = f"array({value.dtype.name if value.dtype != bool else 'bool'}, {list(value.shape)}, "
        if max_values is not None and value.size > max_values:
            return head + f"<{value.size} values>)"
        return head + "[" + ", ".join(format_attr(v) for v in value.reshape(-1).tolist()) + "])"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {format_attr(v, max_values)}" for k, v in value.items()) + "}"
    raise TypeError(f"attribute of type {type(value).__name__} has no IR text form")


def _node_line(node: Node, name: Namer, max_values: int | None) -> str:
    outs = ", ".join(f"%{name(o)} : {o.type}" for o in node.outputs)
    attrs = ""
    if node.attrs:
        attrs = "[" + ", ".join(f"{k}={format_attr(v, max_values)}" for k, v in node.attrs.items()) + "]"
    args = ", ".join(f"%{name(v)}" for v in node.inputs)
    text = f"{outs} = {node.op}{attrs}({args})" if outs else f"= {node.op}{attrs}({args})"
    if node.loc is not None:
        text += f" # {node.loc}"
    return text


def _print_block(block: Block, name: Namer, indent: int, lines: list[str], max_values: int | None) -> None:
    pad = " " * indent
    for node in block:
        lines.append(pad + _node_line(node, name, max_values))
        for i, b in enumerate(node.blocks):
            params = ", ".join(f"%{name(p)} : {p.type}" for p in b.params)
            lines.append(f"{pad}  block{i}({params}):")
            _print_block(b, name, indent + 4, lines, max_values)
            lines.append(f"{pad}    -> ({', '.join('%' + name(r) for r in b.returns)})")


def print_graph(graph: Graph, max_values: int | None = None) -> str:
    """The graph as text: `graph(%x : Tensor(float32, [B, 4])):` then one node per line. Every
    constant's values are written (parse() reads the text back) unless `max_values` is given: then an
    array of more values prints as `array(float32, [784, 512], <401408 values>)`, as `str(graph)` does."""
    name = Namer()
    params = ", ".join(f"%{name(p)} : {p.type}" for p in graph.inputs)
    lines = [f"graph({params}):"]
    with deep_recursion():
        _print_block(graph.block, name, 2, lines, max_values)
    lines.append(f"  return ({', '.join('%' + name(v) for v in graph.outputs)})")
    return "\n".join(lines) + "\n"


# --- .code -----------------------------------------------------------------------

def _py_name(name: Namer, v: Value) -> str:
    text = name(v)
    return text.replace(".", "_") if not text[0].isdigit() else f"_{text}"


def _code_expr(node: Node, name: Namer) -> str:
    args = [_py_name(name, v) for v in node.inputs]
    op = node.op
    if op == "prim::Constant":
        value = node.attrs.get("value")
        return f"<tensor {list(value.shape)}>" if isinstance(value, np.ndarray) else format_attr(value)
    if op == "prim::GetAttr":
        return f"{args[0]}.{node.attrs['name']}"
    if op == "prim::TupleConstruct":
        return "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
    if op == "prim::ListConstruct":
        return "[" + ", ".join(args) + "]"
    if op == "prim::DictConstruct":
        return "{" + ", ".join(f"{k}: {v}" for k, v in zip(args[0::2], args[1::2])) + "}"
    if op in ("prim::TupleUnpack", "prim::ListUnpack"):
        return args[0]
    if op == "prim::TupleIndex":
        return f"{args[0]}[{node.attrs['index']}]"
    if op == "prim::Call":
        return f"{node.attrs['function']}({', '.join(args)})"
    if op == "prim::RaiseException":  # scripted code raises RuntimeError with the exception's name and text
        return f"raise RuntimeError({' + '.join([format_attr(node.attrs['message'])] + args)})"
    return f"{op.replace('::', '.')}({', '.join(args)})"


def _code_branch(block: Block, outs: str, name: Namer, indent: int, lines: list[str]) -> None:
    """A block whose returns become the node's outputs `outs` (an if's branch, a with's body)."""
    _code_block(block, name, indent, lines)
    if outs:
        lines.append(f"{'    ' * indent}{outs} = {', '.join(_py_name(name, r) for r in block.returns)}")
    elif not len(block):
        lines.append(f"{'    ' * indent}pass")


def _code_block(block: Block, name: Namer, indent: int, lines: list[str]) -> None:
    pad = "    " * indent
    for node in block:
        outs = ", ".join(_py_name(name, o) for o in node.outputs)
        if node.op == "prim::If":
            lines.append(f"{pad}if {_py_name(name, node.inputs[0])}:")
            for i, b in enumerate(node.blocks):
                if i == 1:
                    lines.append(f"{pad}else:")
                _code_branch(b, outs, name, indent + 1, lines)
        elif node.op == "prim::Loop":
            body = node.blocks[0]
            carried_in = [_py_name(name, v) for v in node.inputs[2:]]
            params = [_py_name(name, p) for p in body.params]
            for p, v in zip(params[1:], carried_in):
                lines.append(f"{pad}{p} = {v}")
            lines.append(f"{pad}{params[0]} = 0")
            lines.append(f"{pad}_continue = {_py_name(name, node.inputs[1])}")
            lines.append(f"{pad}while {params[0]} < {_py_name(name, node.inputs[0])} and _continue:")
            _code_block(body, name, indent + 1, lines)
            rets = [_py_name(name, r) for r in body.returns]
            lines.append(f"{pad}    _continue = {rets[0]}")
            for p, r in zip(params[1:], rets[1:]):
                lines.append(f"{pad}    {p} = {r}")
            lines.append(f"{pad}    {params[0]} += 1")
            for o, p in zip(node.outputs, params[1:]):
                lines.append(f"{pad}{_py_name(name, o)} = {p}")
        elif node.op == "prim::With":  # the exit block also runs when the body raises
            body, exit_block = node.blocks
            lines.append(f"{pad}try:")
            _code_branch(body, outs, name, indent + 1, lines)
            lines.append(f"{pad}finally:")
            _code_block(exit_block, name, indent + 1, lines)
        elif node.op == "prim::FusionGroup":
            lines.append(f"{pad}# fusion group")
            body = node.blocks[0]
            for p, v in zip(body.params, node.inputs):
                lines.append(f"{pad}{_py_name(name, p)} = {_py_name(name, v)}")
            _code_block(body, name, indent, lines)
            lines.append(f"{pad}{outs} = {', '.join(_py_name(name, r) for r in body.returns)}")
        elif node.outputs:
            lines.append(f"{pad}{outs} = {_code_expr(node, name)}")
        else:
            lines.append(f"{pad}{_code_expr(node, name)}")


def graph_code(graph: Graph, method: str = "forward") -> str:
    """Readable Python-like source of the graph, for `.code`."""
    name = Namer()
    params = ", ".join(f"{_py_name(name, p)}: {p.type}" for p in graph.inputs)
    lines = [f"def {method}({params}):"]
    with deep_recursion():
        _code_block(graph.block, name, 1, lines)
    rets = [_py_name(name, v) for v in graph.outputs]
    lines.append(f"    return {', '.join(rets) if len(rets) != 1 else rets[0]}" if rets else "    return None")
    return "\n".join(lines) + "\n"
