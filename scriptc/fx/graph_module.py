"""torch.fx.GraphModule: an nn.Module whose forward is Python generated from a Graph."""

from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from scriptc.fx.codegen import builtin_globals as _builtin_globals
from scriptc.fx.graph import Graph, PythonCode
from scriptc.nn import Module, Parameter
from scriptc.tensors import Tensor

__all__ = ["GraphModule"]

_SOURCE_KEYS = itertools.count()


def _exec_with_source(src: str, globals_: dict) -> None:
    """exec the generated source under a linecache entry, so tracebacks, inspect.getsource and
    jit.script can read it."""
    key = f"<eval_with_key>.{next(_SOURCE_KEYS)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Give to_module the attribute at path `target` of from_module (intermediate modules created empty)."""
    *prefix, field = target.split(".")
    for item in prefix:
        source = getattr(from_module, item)
        destination = getattr(to_module, item, None)
        if source is destination:
            return
        if destination is None:
            destination = Module()
            setattr(to_module, item, destination)
        from_module, to_module = source, destination
    original = getattr(from_module, field)
    if isinstance(original, Tensor) and not isinstance(original, Parameter):
        to_module.register_buffer(field, original)
    else:
        setattr(to_module, field, original)


def _assign_attr(value: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        child = getattr(to_module, item, None)
        if child is None:
            child = Module()
            setattr(to_module, item, child)
        to_module = child
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _add_indent(text: str, spaces: int) -> str:
    """Indent every non-blank line after the first (blank lines become empty), as torch's printing does."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [" " * spaces + line if line.strip() else "" for line in rest])


def _readable(module: GraphModule, name: str) -> str:
    code = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    children = [""] + [_readable(child, child_name) for child_name, child in module.named_children()
                       if isinstance(child, GraphModule)]
    return _add_indent(f"class {name}(torch.nn.Module):\n{code}", 4) + _add_indent("\n".join(children), 4)


# GraphModule.meta[_USER_PRESERVED_ATTRIBUTES_KEY]: attributes a deep copy sets again on the copy.
_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class _CodeOnlyModule(Module):
    """A module made of another's state (`__dict__`), from which a GraphModule copy is rebuilt."""

    def __init__(self, body: dict) -> None:
        super().__init__()
        self.__dict__ = body


class GraphModule(Module):
    """A Module built from `root` (a Module or a dict of attribute paths to values) and a Graph: it copies
    the submodules, parameters and buffers the graph's get_attr/call_module nodes name, and its forward
    is the graph's generated code. Assigning `graph` (or calling recompile()) regenerates forward."""

    def __new__(cls, *args, **kwargs):
        # Each instance gets its own class, so that its generated forward can be a method of it.
        base = next(t for t in cls.__mro__ if t.__qualname__.split(".")[-1] != "GraphModuleImpl")

        class GraphModuleImpl(base):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        self.meta: dict = {}
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            if isinstance(root, _CodeOnlyModule):
                # Rebuilt from a copy or a pickle: keep every child and tensor, used by the graph or not.
                for name in [n for n, _ in root.named_children()] + [n for n, _ in root.named_buffers()] + \
                        [n for n, _ in root.named_parameters()]:
                    _copy_attr(root, self, name)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The Graph this module runs; assigning one regenerates the code."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of forward, as generated from the graph."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate forward from self.graph (call after editing the graph in place)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        globals_ = dict(python_code.globals)
        _exec_with_source(self._code, globals_)
        type(self).forward = globals_["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class with its forward (and its GraphModule children's), printed and returned."""
        text = _readable(self, type(self).__name__)
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join([super().__repr__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __repr__(self) -> str:
        return super().__repr__()

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install m at the dotted path target, creating empty intermediate modules; False when a
        non-Module attribute is in the way."""
        *prefix, field = target.split(".")
        module: Module = self
        for item in prefix:
            child = getattr(module, item, None)
            if child is None:
                child = Module()
                setattr(module, item, child)
            if not isinstance(child, Module):
                return False
            module = child
        module.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at target; False when there is none."""
        *prefix, field = target.split(".")
        module: Module = self
        for item in prefix:
            module = getattr(module, item, None)
            if not isinstance(module, Module):
                return False
        if not isinstance(getattr(module, field, None), Module):
            return False
        delattr(module, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no call_module or get_attr node uses."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    used.update(name and f"{node.target}.{name}" or node.target
                                for name, _ in self.get_submodule(node.target).named_modules())
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def _deepcopy_init(self):
        """The __init__ a deep copy is built with (subclasses taking other arguments override it)."""
        return GraphModule.__init__

    def __deepcopy__(self, memo) -> GraphModule:
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        body = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        self._deepcopy_init()(copied, body, body.__dict__["_graph"], type(self).__name__)
        copied.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        for name, value in copied.meta.get(_USER_PRESERVED_ATTRIBUTES_KEY, {}).items():
            setattr(copied, name, value)
        return copied

    def __copy__(self) -> GraphModule:
        return GraphModule(self, self._graph, type(self).__name__)

    def __reduce__(self):
        # Pickled as its state and generated code; unpickling re-traces the code (torch does the same).
        python_code = self._graph.python_code(root_module="self")
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        extra_globals = {name: value for name, value in python_code.globals.items() if name not in _builtin_globals()}
        return (_rebuild_graph_module, (state, python_code.src, extra_globals, type(self).__name__))


def _rebuild_graph_module(state: dict, src: str, extra_globals: dict, class_name: str) -> GraphModule:
    from scriptc.fx._symbolic_trace import Tracer

    class KeepModules(Tracer):
        def is_leaf_module(self, m, module_qualified_name: str) -> bool:
            return True
    globals_ = {**_builtin_globals(), **extra_globals}
    _exec_with_source(src, globals_)
    code_only = type("CodeOnlyModule", (_CodeOnlyModule,), {"forward": globals_["forward"]})(state)
    return GraphModule(code_only, KeepModules().trace(code_only), class_name)
