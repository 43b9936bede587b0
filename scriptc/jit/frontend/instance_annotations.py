"""torch's warning for a module whose `__init__` annotates an attribute it sets to an empty container
or None (`self.x: List[int] = []`, `self.x = torch.jit.annotate(Dict[str, int], {})`): TorchScript
types a module's attributes from their values, so such an annotation is lost, and scripted code that
assigns the attribute then fails."""

from __future__ import annotations

import ast as python_ast
import inspect
import textwrap
import warnings

WARNING = ("The TorchScript type system doesn't support instance-level annotations on empty non-base types in "
           "`__init__`. Instead, either 1) use a type annotation in the class body, or 2) wrap the type in "
           "`torch.jit.Attribute`.")

_EMPTY = {"List": python_ast.List, "list": python_ast.List, "Dict": python_ast.Dict, "dict": python_ast.Dict,
          "Optional": python_ast.Constant}


def warn_on_lost_annotations(module) -> None:
    """Warn (UserWarning, torch's words) once per such annotation in type(module).__init__; attributes
    annotated in the class body are typed by that annotation and are left alone."""
    from scriptc.nn.module import Module

    init = type(module).__init__
    if init is Module.__init__ or not inspect.isfunction(init):
        return
    try:
        tree = python_ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return  # (no source: nothing to check, as torch cannot either)
    declared = set(getattr(type(module), "__annotations__", {}))
    for node in python_ast.walk(tree):
        if _lost_annotation(node, declared):
            warnings.warn(WARNING, UserWarning, stacklevel=3)


def _lost_annotation(node, declared: set) -> bool:
    if isinstance(node, python_ast.AnnAssign):
        target = node.target
        if not (isinstance(target, python_ast.Attribute) and isinstance(target.value, python_ast.Name) and
                target.value.id == "self") or target.attr in declared:
            return False
        return _is_empty(node.value, _container_name(node.annotation))
    if isinstance(node, python_ast.Assign) and isinstance(node.value, python_ast.Call):
        target = node.targets[0]
        if isinstance(target, python_ast.Attribute) and target.attr in declared:
            return False
        call = node.value
        if _dotted(call.func).rpartition(".")[2] != "annotate" or len(call.args) != 2:  # (torch.jit / jit / ...)
            return False
        return _is_empty(call.args[1], _container_name(call.args[0]))
    return False


def _container_name(annotation) -> str | None:
    if isinstance(annotation, python_ast.Subscript):
        return _dotted(annotation.value).rpartition(".")[2]
    return None


def _is_empty(value, container: str | None) -> bool:
    kind = _EMPTY.get(container)
    if kind is None or not isinstance(value, kind):
        return False
    if kind is python_ast.Constant:
        return value.value is None
    return not (value.elts if kind is python_ast.List else value.keys)


def _dotted(node) -> str:
    if isinstance(node, python_ast.Name):
        return node.id
    if isinstance(node, python_ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""
