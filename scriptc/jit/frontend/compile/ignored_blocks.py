"""`with torch.jit._IgnoreContextManager(a="inp:int", c="out:int"):` in scripted code: the block is not
compiled; it becomes a Python function of its inputs returning its outputs, called as a @jit.ignore'd
function is (torch's frontend rewrites the statement the same way)."""

from __future__ import annotations

import ast as python_ast
import re
import textwrap

from scriptc.types import NoneType, TupleType

from .. import ast
from .emitter import function_globals


class IgnoredBlocks:
    """The ignored-block statement."""

    def is_ignore_context(self, node: ast.Node) -> bool:
        """Whether `node` is a call of torch.jit._IgnoreContextManager."""
        if not isinstance(node, ast.Call):
            return False
        found, obj = self.lookup_object(node.func)
        return found and self.ctx.jit_functions.get(id(obj)) == "_IgnoreContextManager"

    def ignored_block(self, node: ast.With) -> None:
        call = node.items[0].context
        if len(node.items) != 1 or node.items[0].name is not None or call.args:
            raise self.error("torch.jit._IgnoreContextManager takes only keyword arguments, as the with "
                             "statement's only item and without `as`", call)
        inputs, outputs = [], []
        for keyword in call.keywords:
            text = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
            kind, _, annotation = text.partition(":") if isinstance(text, str) else ("", "", "")
            if kind not in ("inp", "out") or not annotation.strip():
                raise self.error(f"torch.jit._IgnoreContextManager: {keyword.name}= must be a string "
                                 "'inp:<type>' or 'out:<type>'", keyword)
            declared = self.annotation(self.parse_annotation_text(annotation.strip(), keyword))
            (inputs if kind == "inp" else outputs).append((keyword.name, declared, keyword))
        values = []
        for name, declared, keyword in inputs:
            value = self.read(name)
            if value is None:
                raise self.error(f"undefined value {name}", keyword)
            values.append(self.coerce(self.as_value(value, keyword), declared, keyword,
                                      f"torch.jit._IgnoreContextManager: '{name}' is declared as {declared} "
                                      f"but has type {getattr(value, 'type', value)}"))
        function = self.block_function(node, [name for name, _, _ in inputs], [name for name, _, _ in outputs])
        types = [declared for _, declared, _ in outputs]
        returns = types[0] if len(types) == 1 else TupleType(types) if types else NoneType
        self.at(node)
        result = self.emit1("prim::Call", values, returns, {"function": self.ctx.register_ignored(function)})
        results = [result] if len(types) == 1 else (
            self.emit("prim::TupleUnpack", [result], types).outputs if types else [])
        for (name, _, keyword), value in zip(outputs, results):
            self.assign_name(name, value, keyword)

    def block_function(self, node: ast.With, inputs: list[str], outputs: list[str]):
        """The with statement's body as a Python function of `inputs` returning `outputs` (one value,
        a tuple of several, or None), seeing the scripted function's globals."""
        lines = self.source.lines
        first = node.line - 1
        indent = len(lines[first]) - len(lines[first].lstrip())
        last = max(node.body[0].line - 1, first + 1)  # past the header, which may span lines
        while last < len(lines) and (not lines[last].strip() or
                                     len(lines[last]) - len(lines[last].lstrip()) > indent):
            last += 1
        try:
            statement = python_ast.parse(textwrap.dedent("\n".join(lines[first:last]))).body[0]
        except SyntaxError as exc:
            raise self.error(f"torch.jit._IgnoreContextManager: cannot read the block: {exc.msg}", node) from None
        location = re.sub(r"[^a-zA-Z0-9_]", "_", self.source.filename)
        name = f"func_ignore_{location}_{node.line + self.source.line_offset}"
        returned = python_ast.Tuple([python_ast.Name(o, python_ast.Load()) for o in outputs], python_ast.Load())
        body = statement.body + [python_ast.Return(
            returned if len(outputs) > 1 else python_ast.Name(outputs[0], python_ast.Load()) if outputs else None)]
        module = python_ast.parse(f"def {name}({', '.join(inputs)}):\n    pass")
        module.body[0].body = body
        python_ast.increment_lineno(module, first + self.source.line_offset)
        python_ast.fix_missing_locations(module)
        namespace = dict(function_globals(self.fn))
        exec(compile(module, self.source.filename, "exec"), namespace)  # noqa: S102 - the user's own block
        return namespace[name]
