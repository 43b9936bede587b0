"""Compile-time values: what a name can mean in a scripted function besides an IR Value.

A global name resolves to a Python object, which becomes one of these (resolve.py): a namespace
(torch, math, torch.nn.functional), an op-table function, a Python builtin, a user function, a
class, a module reached through `self`, ... Calling, indexing or reading an attribute of one is
decided at compile time; only IR Values exist at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scriptc.ir.graph import Value
from scriptc.types import Type


@dataclass
class SugaredModule:
    """An nn.Module reached through `self`: the Python object, its IR value (for prim::GetAttr) and
    its attribute path from the top module."""

    module: Any
    value: Value
    path: str
    traced: Any = None  # the TracedModule it was, whose traced graph a call inlines (traced_calls.py)
    loaded: Any = None  # the jit.load'ed module it is, whose stored forward a call inlines (traced_calls.py)
    interface: Any = None  # the module interface its attribute is annotated with: only its methods are reachable


@dataclass
class ModuleMethod:
    """A method of a module reached through `self`, called by inlining it."""

    owner: SugaredModule
    fn: Any


@dataclass
class PythonNamespace:
    """A Python module (torch, torch.nn.functional, math, typing, ...): attributes resolve to objects."""

    module: Any


@dataclass
class OpFunction:
    """A function generated from the op table (torch.relu, F.conv2d): calls pick an overload by schema.
    `namespaced`: reached through a binding, which may stand for ops that are neither torch.<name>
    functions nor methods (torch.linalg.qr, torch.fft.fft); `aten`: through torch.ops.aten, which
    calls every tensor op of the name as a function (aten::index_put(self, ...))."""

    name: str
    namespaced: bool = False
    aten: bool = False


@dataclass
class Builtin:
    """A Python builtin function or a math-module function (len, range, isinstance, math.sqrt)."""

    name: str


@dataclass
class JitFunction:
    """One of torch.jit's markers and helpers with a meaning in script (annotate, isinstance, fork, ...)."""

    name: str


@dataclass
class UserFunction:
    """A Python function compiled to its own graph and called with prim::Call (or kept in Python
    when @jit.ignore'd)."""

    fn: Any


@dataclass
class OverloadedFunction:
    """A function declared with @jit._overload: calls pick the declaration whose types fit."""

    fn: Any
    declarations: list


@dataclass
class ClassRef:
    """A class: a @jit.script class, a NamedTuple, an Enum, an exception type, or a type used in
    isinstance(); `kind` says which."""

    cls: Any
    kind: str


@dataclass
class MethodRef:
    """A method of a value (tensor, list, str, dict, script object) awaiting its call."""

    base: Value
    name: str


@dataclass
class SugaredTuple:
    """A tuple holding compile-time values (modules, functions): iterated by unrolling, indexed by
    constants. Tuples of IR values are ordinary prim::TupleConstruct values. An op's named results
    (torch.return_types: `x.max(1).indices`) carry their `names`."""

    items: list
    names: tuple[str, ...] = ()


@dataclass
class SliceValue:
    """A slice() object (held in a variable, used as an index): its bounds, None where absent."""

    start: object
    stop: object
    step: object


@dataclass
class TypeValue:
    """A type used as a value: `List[int]` in torch.jit.isinstance or jit.annotate."""

    type: Type


@dataclass
class Refined:
    """A variable refined in the current branch (`x is not None`, isinstance): its prim::Refine node is
    emitted where the variable is first read. `after_exit`: narrowed only because the other branch
    broke or continued - true for the rest of this statement list, not where that branch's value
    flows (the loop's carried value, an enclosing join)."""

    value: Value
    type: Type
    after_exit: bool = False


@dataclass
class IgnoredMethod:
    """A @jit.ignore'd or @jit.unused method of a module."""

    module: Any
    name: str
    unused: bool = False


@dataclass
class Overloads:
    """@jit._overload_method declarations of a module method."""

    owner: SugaredModule
    fn: Any
    declarations: list = field(default_factory=list)


@dataclass
class ModuleChoice:
    """One of a ModuleList's or ModuleDict's modules picked by a run-time index, which an annotation
    with a module interface allows (`m: Interface = self.layers[i]`): calling `method` on it runs
    the picked module's (a chain of prim::If on the index)."""

    candidates: list  # (key, SugaredModule): position or name, and the module
    index: Value
    method: str = "forward"


@dataclass
class TracedFunction:
    """A function made by jit.trace, called from scripted code: its traced graph is inlined."""

    scripted: Any  # the ScriptFunction jit.trace returned


@dataclass
class ModuleDictMethod:
    """`self.d.keys()` / `.values()` / `.items()` of a ModuleDict, unrolled when called."""

    owner: SugaredModule
    name: str
