"""torch.export: a module captured whole, ahead of time, as one graph with guards on its input shapes.

`torch.export.export(model, args, dynamic_shapes=...)` records the model the way jit.trace does
(one straight-line graph, compiled by scriptc), and refuses Python control flow on tensor values
as torch does. `ep.module()` is the runnable result: it checks each call against the shapes seen
at export (a dim declared with `Dim` may vary, within its min/max, and dims sharing one Dim must
agree) and raises torch's "Guard failed" AssertionError otherwise. `torch.export.save/load` keep the
program and its guards in one file.
"""

from __future__ import annotations

import inspect
import json
import warnings
from dataclasses import dataclass
from typing import Any

from scriptc.errors import TracerWarning
from scriptc.nn import Module
from scriptc.tensors import Tensor

__all__ = ["Dim", "ExportGraphSignature", "ExportedProgram", "GuardOnDataDependentSymNode", "dims", "export", "load", "save"]

_GUARDS_FILE = "export_guards.json"


class _DimHint:
    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"Dim.{self.kind}"


class Dim:
    """A named dynamic dimension for dynamic_shapes (`Dim("batch", min=1, max=64)`); Dim.AUTO and
    Dim.DYNAMIC mark a dim dynamic without a name, Dim.STATIC keeps it fixed."""

    AUTO = _DimHint("AUTO")
    DYNAMIC = _DimHint("DYNAMIC")
    STATIC = _DimHint("STATIC")

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None):
        if min is not None and max is not None and min > max:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min, self.max = min, max

    def __repr__(self) -> str:
        return f"Dim('{self.__name__}', min={self.min}, max={self.max})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:
    """One Dim per name, all with the same range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


class GuardOnDataDependentSymNode(RuntimeError):
    """Export met Python control flow (or a Python value) that depends on a tensor's data."""


def _dim_spec(spec, name: str, rank: int) -> dict:
    """{dim index: (group name, min, max)} for one input's entry of dynamic_shapes."""
    if spec is None:
        return {}
    if isinstance(spec, (list, tuple)):
        spec = dict(enumerate(spec))
    if not isinstance(spec, dict):
        raise ValueError(f"Unexpected dynamic_shape {spec!r} of Tensor {name}: expected a dict or a list/tuple")
    out = {}
    for index, dim in spec.items():
        if not isinstance(index, int) or not -rank <= index < rank:
            raise ValueError(f"dynamic_shapes of {name} names dim {index!r}, but {name} has {rank} dims")
        index %= rank
        if isinstance(dim, Dim):
            out[index] = (dim.__name__, dim.min, dim.max)
        elif isinstance(dim, _DimHint) and dim.kind != "STATIC":
            out[index] = (f"{name}.size()[{index}]", None, None)
        elif dim is not None and not (isinstance(dim, _DimHint) or isinstance(dim, int)):
            raise ValueError(f"Unexpected dimension spec {dim!r} for {name} dim {index}")
    return out


def _guards(names: list[str], values: list, dynamic_shapes) -> list:
    """Per input: None (not a tensor) or (rank, [(size seen, (group, min, max) or None) per dim])."""
    if isinstance(dynamic_shapes, dict):
        unknown = set(dynamic_shapes) - set(names)
        if unknown:
            raise ValueError(f"dynamic_shapes names {sorted(unknown)}, which are not arguments of forward "
                             f"({', '.join(names)})")
        specs = [dynamic_shapes.get(n) for n in names]
    elif isinstance(dynamic_shapes, (list, tuple)):
        specs = list(dynamic_shapes) + [None] * (len(names) - len(dynamic_shapes))
    else:
        specs = [None] * len(names)
    guards = []
    for name, value, spec in zip(names, values, specs):
        if not isinstance(value, Tensor):
            guards.append(None)
            continue
        dynamic = _dim_spec(spec, name, value.dim())
        guards.append((value.dim(), [(size, dynamic.get(i)) for i, size in enumerate(value.shape)]))
    return guards


def _check_guards(names: list[str], guards: list, values: list) -> None:
    seen: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for name, guard, value in zip(names, guards, values):
        if guard is None:
            continue
        rank, dim_guards = guard
        if not isinstance(value, Tensor):
            raise AssertionError(f"Guard failed: {name} is a Tensor (got {type(value).__name__})")
        if value.dim() != rank:
            raise AssertionError(f"Guard failed: {name}.dim() == {rank}")
        for i, (example, dynamic) in enumerate(dim_guards):
            size, where = value.shape[i], f"{name}.size()[{i}]"
            if dynamic is None:
                if size != example:
                    raise AssertionError(f"Guard failed: {where} == {example}")
                continue
            group, low, high = dynamic
            if low is not None and size < low:
                raise AssertionError(f"Guard failed: {where} >= {low}")
            if high is not None and size > high:
                raise AssertionError(f"Guard failed: {where} <= {high}")
            if group in sizes and sizes[group] != size:
                raise AssertionError(f"Guard failed: {where} == {seen[group]}")
            sizes.setdefault(group, size)
            seen.setdefault(group, where)


def _is_traceable(value) -> bool:
    if isinstance(value, Tensor):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(_is_traceable(v) for v in value)


class _WithConstants(Module):
    """The exported module called with its non-tensor arguments fixed (what jit.trace can record)."""

    def __init__(self, module: Module, constants: dict, traced_names: list[str]):
        super().__init__()
        self.inner = module
        self._constants, self._traced_names = constants, traced_names

    def forward(self, *tensors):
        return self.inner(**dict(zip(self._traced_names, tensors)), **self._constants)


class _ExportedModule(Module):
    """What ExportedProgram.module() returns: the compiled graph behind the export's shape guards."""

    def __init__(self, program: "ExportedProgram"):
        super().__init__()
        self._program = program
        self.graph = program.graph

    @property
    def code(self) -> str:
        return str(self.graph)

    def print_readable(self, print_output: bool = True) -> str:
        """The graph as text (printed too unless print_output=False)."""
        if print_output:
            print(self.code)
        return self.code

    def forward(self, *args, **kwargs):
        program = self._program
        bound = program._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = [bound.arguments.get(n) for n in program._names]
        _check_guards(program._names, program._guards, values)
        return program._compiled(*[bound.arguments[n] for n in program._traced_names])


@dataclass
class ExportGraphSignature:
    """What the exported graph takes: the module's parameters and buffers, then the user's inputs."""
    parameters: list
    buffers: list
    user_inputs: list


class ExportedProgram:
    """The result of torch.export.export: the graph, its parameters and buffers, and the shape guards;
    run it through `.module()`."""

    def __init__(self, compiled, signature: inspect.Signature, guards: list, example_inputs: tuple,
                 traced_names: list[str]):
        self._compiled = compiled
        self._signature = signature
        self._names = list(signature.parameters)
        self._traced_names = traced_names  # (the graph's inputs; other arguments were constants when captured)
        self._guards = guards
        self.example_inputs = example_inputs

    @property
    def graph(self):
        return self._compiled.graph

    @property
    def graph_module(self) -> Module:
        return self.module()

    @property
    def state_dict(self) -> dict:
        return {k.removeprefix("inner."): v for k, v in self._compiled.state_dict().items()}

    def named_parameters(self):
        return self._compiled.named_parameters()

    def parameters(self):
        return self._compiled.parameters()

    def named_buffers(self):
        return self._compiled.named_buffers()

    def buffers(self):
        return self._compiled.buffers()

    @property
    def graph_signature(self) -> "ExportGraphSignature":
        return ExportGraphSignature([n.removeprefix("inner.") for n, _ in self._compiled.named_parameters()],
                                    [n.removeprefix("inner.") for n, _ in self._compiled.named_buffers()],
                                    list(self._traced_names))

    @property
    def range_constraints(self) -> dict:
        """{dynamic dim name: (min, max)} (None where unbounded)."""
        return {group: (low, high) for guard in self._guards if guard is not None
                for _, dynamic in guard[1] if dynamic is not None for group, low, high in [dynamic]}

    def module(self) -> Module:
        """A Module that runs the exported graph (after checking the inputs against the guards)."""
        return _ExportedModule(self)

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops: bool = False) -> "ExportedProgram":
        """The program with its ops decomposed: scriptc's graph is already made of the op table's ops."""
        return self

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def __str__(self) -> str:
        return "ExportedProgram:\n" + str(self.graph)


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = ()) -> ExportedProgram:
    """Capture mod's forward over example inputs as an ExportedProgram. dynamic_shapes (by argument
    name or position: {dim: Dim} or a per-dim list) says which dims may vary; the others are fixed.
    Control flow on tensor values cannot be captured (GuardOnDataDependentSymNode, as torch)."""
    from scriptc import jit

    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = dict(kwargs or {})
    signature = inspect.signature(mod.forward)
    bound = signature.bind(*args, **kwargs)
    names = list(signature.parameters)
    values = [bound.arguments.get(n) for n in names]
    guards = _guards(names, values, dynamic_shapes)
    traced_names = [n for n in bound.arguments if _is_traceable(bound.arguments[n])]
    constants = {n: v for n, v in bound.arguments.items() if n not in traced_names}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TracerWarning)
        if constants:  # numbers, strings, None: part of the captured program, as torch specializes on them
            compiled = jit.trace(_WithConstants(mod, constants, traced_names),
                                 tuple(bound.arguments[n] for n in traced_names), check_trace=False)
        else:
            compiled = jit.trace(mod, example_kwarg_inputs={n: bound.arguments[n] for n in traced_names},
                                 check_trace=False)
    for warning in caught:
        if issubclass(warning.category, TracerWarning) and "might cause the trace to be incorrect" in str(
                warning.message):
            raise GuardOnDataDependentSymNode(
                f"Could not guard on data-dependent expression at {warning.filename}:{warning.lineno}: "
                f"{str(warning.message).split('.')[0]}. torch.export captures no Python control flow on "
                "tensor values; write it with torch.cond or torch.where.")
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return ExportedProgram(compiled, signature, guards, (tuple(args), kwargs), traced_names)


def save(ep: ExportedProgram, f, *, extra_files: dict | None = None, opset_version: dict | None = None,
         pickle_protocol: int = 2) -> None:
    """Write an ExportedProgram (graph, weights, guards) to a path or file object."""
    from scriptc import jit

    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got '{type(ep).__name__}' "
                        "instead.")
    files = dict(extra_files or {})
    files[_GUARDS_FILE] = json.dumps({"names": ep._names, "guards": ep._guards, "traced": ep._traced_names})
    jit.save(ep._compiled, f, _extra_files=files)


def load(f, *, extra_files: dict | None = None, expected_opset_version: dict | None = None) -> ExportedProgram:
    """Read back what torch.export.save wrote."""
    from scriptc import jit
    from scriptc.errors import ArchiveError

    files: dict[str, Any] = {_GUARDS_FILE: ""}
    files.update({k: "" for k in (extra_files or {})})
    compiled = jit.load(f, _extra_files=files)
    if not files[_GUARDS_FILE]:
        raise ArchiveError("not an exported program: the file has no export guards (was it written by "
                           "torch.export.save?)")
    saved = json.loads(files[_GUARDS_FILE])
    names = saved["names"]
    guards = [None if g is None else (g[0], [(size, None if d is None else tuple(d)) for size, d in g[1]])
              for g in saved["guards"]]
    if extra_files is not None:
        extra_files.update({k: files[k] for k in extra_files})
    # (arguments the graph does not take were constants when captured: a call may leave them out)
    signature = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                     default=inspect.Parameter.empty if n in saved["traced"] else None)
                                   for n in names])
    return ExportedProgram(compiled, signature, guards, ((), {}), saved["traced"])
