"""jit.trace: run a function or module on example tensors and record every op-table call as IR.

Parameters and buffers become `prim::GetAttr` chains from `self`; tensor sizes
read during the trace are recorded (`size(%x, 0)`) so reshapes and slices follow the
sizes, and the dims the graph is dynamic in are found by following probe sizes
(trace_dims.py); a tensor's value steering Python control flow emits a
TracerWarning at the user's line, because that decision is baked into the graph.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import warnings
from typing import Any

import numpy as np

from scriptc import tensors as _tensors
from scriptc.errors import TracerWarning
from scriptc.ir.graph import Graph, Node, SourceLocation, Value, clone_node
from scriptc.ir.verify import verify
from scriptc.ops import OPS
from scriptc.ops.generator import Generator
from scriptc.ops.operators import INT_ARITHMETIC, Operator
from scriptc.tensors import Size, Tensor
from scriptc.types import (
    DictType,
    Float,
    Int,
    ListType,
    ModuleType,
    OptionalType,
    Scalar,
    TensorType,
    TupleType,
    type_of_constant,
)

from .trace_check import check_trace_replay
from .trace_dims import BATCH, TraceDims
from .trace_examples import (argument_names, cloned, example_sizes, example_tuple, keyword_call, refuse_dict_output,
                             tensors_in, traced_signature)
from .traced_children import recording_child_inputs

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OPS_DIR = os.path.join(_PACKAGE_DIR, "ops")


def user_location() -> SourceLocation | None:
    """file:line:col of the innermost frame outside scriptc (the user's line)."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIR)
                                 or frame.f_code.co_filename.startswith("<scriptc")):
        frame = frame.f_back
    if frame is None:
        return None
    col = 0
    try:
        positions = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        col = (positions[2] or 0) + 1
    except (IndexError, AttributeError, TypeError):
        pass
    return SourceLocation(os.path.basename(frame.f_code.co_filename), frame.f_lineno, col)


class TracedInt(int):
    """An int read from a tensor's size during tracing; arithmetic on it is recorded too, and
    `_shadows` holds its value in each of the tracer's probe worlds (None: the same in all)."""

    def __new__(cls, value: int, tracer: "Tracer", make_value, shadows: tuple | None = None):
        self = super().__new__(cls, value)
        self._tracer, self._make_value, self._shadows, self._value = tracer, make_value, shadows, None
        return self

    def value(self) -> Value:
        if self._value is None:
            self._value = self._make_value()
        return self._value

    def _binary(self, other, operator: Operator, reflected=False):
        fn = operator.function
        if not isinstance(other, int) or isinstance(other, bool) or self._tracer is not _tensors._tracer[0]:
            return fn(int(self), other) if not reflected else fn(other, int(self))
        result = fn(int(self), int(other)) if not reflected else fn(int(other), int(self))
        a, b = (self, other) if not reflected else (other, self)
        tracer = self._tracer
        shadows = tracer.dims.combine(fn, int(a), _shadows_of(a), int(b), _shadows_of(b))
        return TracedInt(result, tracer, lambda: tracer.scalar_node(f"{operator.scalar}.scalar", [a, b], Int),
                         shadows)

    def _compare(self, other, name: str):
        """A comparison of sizes is a Python bool the trace bakes in: it must come out the same at
        every probe size of the dynamic dim (`if x.size(0) == 20` fixes that dim). An op's kernel
        checking its arguments against its arrays decides nothing the graph keeps."""
        result = getattr(int, name)(self, other)
        if result is not NotImplemented and isinstance(other, int) and self._tracer is _tensors._tracer[0] \
                and not sys._getframe(2).f_code.co_filename.startswith(_OPS_DIR):
            compare = getattr(int, name)
            self._tracer.dims.check_same(result, self._tracer.dims.combine(
                compare, int(self), self._shadows, int(other), _shadows_of(other)))
        return result

    __hash__ = int.__hash__


def _shadows_of(value) -> tuple | None:
    return value._shadows if isinstance(value, TracedInt) else None


for _operator in INT_ARITHMETIC:  # size arithmetic is recorded: x.view(x.size(0) // 2, -1)
    setattr(TracedInt, f"__{_operator.dunder}__", lambda self, o, op=_operator: self._binary(o, op))
    setattr(TracedInt, f"__r{_operator.dunder}__", lambda self, o, op=_operator: self._binary(o, op, True))
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(TracedInt, _name, lambda self, o, name=_name: self._compare(o, name))


class Tracer:
    """Records op calls into a Graph while `tensors._tracer[0]` points at it."""

    def __init__(self, module=None, name: str = "forward"):
        self.graph = Graph(name)
        self.values: dict[int, Value] = {}
        self.keep: list = []
        self.symbols: dict[int, Any] = {}
        self.constants: dict[tuple, Value] = {}
        self.attr_values: dict[str, Value] = {}
        self.param_paths: dict[int, str] = {}
        self.self_value = None
        self.dims = TraceDims(self.values, user_location)
        self.examples: list = []
        self.functions: dict = {}  # helper functions of scripted code the trace inlined
        self.attributes: dict = {}  # (submodule path, name) -> type: plain attributes it reads
        self.module = module
        if module is not None:
            self.self_value = self.graph.add_input(ModuleType(), "self")
            self.attr_values[""] = self.self_value
            for path, t in list(module.named_parameters()) + list(module.named_buffers()):
                self.param_paths[id(t)] = path
                self.keep.append(t)

    # --- values ------------------------------------------------------------------------
    def add_input(self, example, name: str) -> Value:
        """A graph input for an example: a Tensor, or a tuple/list of them (nested as torch allows),
        which arrives as one Tuple/List value unpacked at the top of the graph."""
        v = self.graph.add_input(self._input_type(example, tuple), name)
        self.examples.append((v, example))
        self._bind_input(example, v)
        return v

    def _input_type(self, example, shape_of):
        """The type of an example input, its tensors' dims as `shape_of` gives them."""
        if isinstance(example, Tensor):
            return TensorType(example.dtype, shape_of(example._data.shape))
        if isinstance(example, dict):
            values = [self._input_type(x, shape_of) for x in example.values()]
            return DictType(type_of_constant(next(iter(example))), _common_type(values))
        items = [self._input_type(x, shape_of) for x in example]
        if isinstance(example, tuple):
            return TupleType(tuple(items))
        return ListType(_common_type(items))

    def _bind_input(self, example, v: Value) -> None:
        if isinstance(example, Tensor):
            self._bind(example, v)
            self.dims.bind(v, self.dims.input_shapes(tuple(example._data.shape)))
            return
        if isinstance(example, dict):  # (torch reads each item where the code does; here all at the top)
            for key, x in example.items():
                item = self._emit("getitem.dict", [v, self.constant(key)], [self._input_type(x, tuple)]).output
                self._bind_input(x, item)
            return
        op = "prim::TupleUnpack" if isinstance(example, tuple) else "prim::ListUnpack"
        types = list(v.type.elems) if isinstance(example, tuple) else [v.type.elem] * len(example)
        for x, out in zip(example, self._emit(op, [v], types).outputs):
            self._bind_input(x, out)

    def _bind(self, t: Tensor, v: Value) -> None:
        self.values[id(t)] = v
        self.keep.append(t)

    def _emit(self, op: str, inputs: list[Value], types: list, attrs=None) -> Node:
        node = Node(op, inputs, types, attrs, user_location())
        self.graph.block.append(node)
        return node

    def constant(self, value) -> Value | None:
        """A prim::Constant for a Python value (cached) or a tensor created during the trace."""
        if isinstance(value, Tensor):
            return None
        value = value.item() if isinstance(value, np.generic) else value  # (np.float32(2.0): a float)
        key = (type(value).__name__, repr(value))
        if key not in self.constants:
            node = Node("prim::Constant", [], [type_of_constant(value)], {"value": value})
            self.graph.block.append(node)
            self.constants[key] = node.output
        return self.constants[key]

    def _attr_value(self, path: str) -> Value:
        if path in self.attr_values:
            return self.attr_values[path]
        parent, _, name = path.rpartition(".")
        base = self._attr_value(parent)
        node = self._emit("prim::GetAttr", [base], [ModuleType(path)], {"name": name})
        self.attr_values[path] = node.output
        return node.output

    def value_of(self, t: Tensor) -> Value:
        v = self.values.get(id(t))
        if v is not None:
            return v
        path = self.param_paths.get(id(t))
        if path is not None:
            parent, _, name = path.rpartition(".")
            node = self._emit("prim::GetAttr", [self._attr_value(parent)],
                              [TensorType(t.dtype, tuple(t._data.shape))], {"name": name})
        else:
            # A tensor from outside the trace (not an input or parameter): baked in as a constant.
            node = Node("prim::Constant", [], [TensorType(t.dtype, tuple(t._data.shape))],
                        {"value": np.array(t._data, copy=True)})
            self.graph.block.append(node)
        self._bind(t, node.output)
        return node.output

    def _arg_value(self, value, arg_type) -> Value:
        if isinstance(value, Tensor):
            number = _NUMBER_KINDS.get(arg_type.elem if isinstance(arg_type, OptionalType) else arg_type)
            if number is not None:  # a one-element tensor where a number is declared (topk's k): read in the graph
                if value.dim():
                    value = _tensors.call(OPS["reshape"], (value, []))
                return self._emit("number.tensor", [self.value_of(value), self.constant(number[0])],
                                  [number[1]]).output
            return self.value_of(value)
        if isinstance(value, TracedInt) and value._tracer is self:
            return value.value()
        if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, TracedInt)) for v in value):
            # a list of numbers holding tensors (pads computed as tensors): the graph reads each as its number
            elem_type = arg_type.elem if isinstance(arg_type, OptionalType) else arg_type
            number = elem_type.elem if isinstance(elem_type, ListType) and elem_type.elem in _NUMBER_KINDS else None
            items = [self._arg_value(v, number) for v in value]
            if number is not None:
                return self._emit("prim::ListConstruct", items, [ListType(_NUMBER_KINDS[number][1])]).output
            if any(isinstance(v, Tensor) for v in value):
                elem = OptionalType(TensorType()) if any(v is None for v in value) else TensorType()
            else:
                elem = Int
            return self._emit("prim::ListConstruct", items, [ListType(elem)]).output
        if isinstance(value, Generator):
            warnings.warn("jit.trace: a torch.Generator passed to a random op is not recorded; the traced graph "
                          "draws from the default generator", TracerWarning, stacklevel=4)
            return self.constant(None)
        if isinstance(value, Size):
            value = list(value)
        if isinstance(value, tuple):
            value = list(value)
        return self.constant(value)

    # --- recording (called from scriptc.tensors) ------------------------------------------------
    def record(self, op, args: tuple, outs: tuple) -> None:
        inputs = [self._arg_value(v, a.type) for v, a in zip(args, op.schema.args)]
        returns_list = isinstance(op.schema.returns[0], ListType) and len(op.schema.returns) == 1
        types = [TensorType(t.dtype, tuple(t._data.shape)) for t in outs]  # (finish() makes them symbolic)
        if returns_list:
            node = self._emit(op.name, inputs, [ListType(TensorType())])
            outputs = self._emit("prim::ListUnpack", [node.output], types).outputs
        else:
            outputs = self._emit(op.name, inputs, types).outputs
        self.dims.record(op, args, outs, outputs)
        for t, v in zip(outs, outputs):
            self._bind(t, v)

    def record_inplace(self, op, args: tuple, target: Tensor) -> None:
        """A write into a fresh tensor is recorded as the pure op (the tensor's later reads take its
        result). A write through a view of a traced tensor (`cache[:b, s:e] = x`, `mask[h, w] = n`,
        `x[:, :1].zero_()`) keeps the in-place op on the view's value, as scripted code has it, so
        that the base's later reads see it."""
        pure = op.inplace_of
        through_view = target._base is not None and id(target._base) in self.values
        if through_view and id(target) not in self.values:
            base = target._base
            if target._data.shape != base._data.shape or target._data.strides != base._data.strides:
                raise RuntimeError(f"jit.trace: {op.name} writes into a view of a traced tensor that the trace did "
                                   "not see made; take the view with indexing or view ops")
            # a view of all of the base the trace did not see made (x[...] = v): it is the base's value
            self._bind(target, self.values[id(base)])
        recorded = op if through_view else pure
        inputs = [self._arg_value(v, a.type) for v, a in zip(args, recorded.schema.args)]
        node = self._emit(recorded.name, inputs, [TensorType(target.dtype, tuple(target._data.shape))])
        self.dims.record(pure, args, (target,), node.outputs)
        self._bind(target, node.output)

    def alias(self, src: Tensor, out: Tensor) -> None:
        if id(src) in self.values or id(src) in self.param_paths:
            self._bind(out, self.value_of(src))

    def record_scripted_call(self, graph: Graph, functions: dict, owner, attributes: dict, args: list, run):
        """A call of scripted code in the trace (a scripted submodule's method, a ScriptFunction): `run(args)`
        computes it untraced, and its graph is inlined - control flow kept, as torch's tracer does - with
        `self` the path of `owner` (a submodule the trace reaches). Returns run's result."""
        path = None if owner is None else self._module_path(owner)
        _tensors._tracer[0] = None
        try:
            out = run(args)
            shapes = self.dims.call_shapes(run, args, out, [graph, *functions.values()])
        finally:
            _tensors._tracer[0] = self
        params = list(graph.inputs)
        mapping = {}
        if owner is not None:
            mapping[params.pop(0)] = self._attr_value(path)
            for sub, name in attributes:
                self.attributes[(_joined(path, sub), name)] = attributes[(sub, name)]
        for param, arg in zip(params, args):
            mapping[param] = self._arg_value(arg, param.type)
        for node in graph.block:
            self.graph.block.append(clone_node(node, mapping))
        self.functions.update(functions)
        outputs = [mapping.get(v, v) for v in graph.outputs]
        if len(outputs) == 1:
            return self._bind_call_output(outputs[0], out, shapes)
        return tuple(self._bind_call_output(v, o, shapes) for v, o in zip(outputs, out))

    def reaches(self, module) -> bool:
        """Whether `module` is the traced module or one of its submodules (its state is in reach)."""
        return self._module_path(module) is not None

    def _module_path(self, module) -> str | None:
        if self.module is None:
            return None
        return next((path for path, m in self.module.named_modules() if m is module), None)

    def _bind_call_output(self, value: Value, out, shapes):
        """Bind an inlined call's result to its tensors (a fresh alias for a tensor the trace already
        knows, which the call returned as it was given); `shapes` gives each tensor's shapes in the
        probe worlds in turn (None: no input moves)."""
        if isinstance(out, Tensor):
            if isinstance(value.type, OptionalType):
                # an Optional[Tensor] result that held a tensor in the trace: the trace uses it as one
                value = self._emit("prim::Refine", [value], [value.type.elem]).output
            if id(out) in self.values or id(out) in self.param_paths:
                out = _tensors.wrap(out._data)
            if isinstance(value.type, TensorType) and value.type.shape is None:
                value.type = TensorType(out.dtype, tuple(out._data.shape), value.type.device)
            if shapes is not None and (world_shapes := next(shapes)) and id(value) not in self.dims.shapes:
                self.dims.shapes[id(value)] = world_shapes
            self._bind(out, value)
            return out
        if isinstance(out, (tuple, list)) and isinstance(value.type, (TupleType, ListType)):
            types = list(value.type.elems) if isinstance(value.type, TupleType) else [value.type.elem] * len(out)
            op = "prim::TupleUnpack" if isinstance(value.type, TupleType) else "prim::ListUnpack"
            parts = self._emit(op, [value], types).outputs
            return type(out)(self._bind_call_output(v, o, shapes) for v, o in zip(parts, out))
        return out

    def traced_size(self, t: Tensor) -> Size:
        if id(t) not in self.values and id(t) not in self.param_paths:
            return Size(t._data.shape)
        value = self.value_of(t)
        return Size(TracedInt(d, self, (lambda i=i: self.scalar_node("size", [t, i], Int)),
                              self.dims.size_shadows(value, i)) for i, d in enumerate(t._data.shape))

    def size_tensor(self, value) -> Tensor | None:
        """A size this trace read (a TracedInt) as the 0-d int64 tensor torch's tracer would have given
        for it, recorded as made from the size; None for any other value."""
        if not isinstance(value, TracedInt) or value._tracer is not self:
            return None
        return _tensors.call(OPS["scalar_tensor.scalar"], (value,))

    def scalar_node(self, op_name: str, args: list, out_type) -> Value:
        inputs = [self._arg_value(a, None) for a in args]
        return self._emit(op_name, inputs, [out_type]).output

    def holds_size(self, value) -> bool:
        """Whether `value` is a size this trace read (it follows the input in the graph)."""
        return isinstance(value, TracedInt) and value._tracer is self

    def constant_result(self, function: str) -> None:
        """Warn, as torch's tracer does, that what `function` made from sizes is baked into the graph."""
        self._warn(f"{function} results are registered as constants in the trace. You can safely ignore this "
                   "warning if you use this function to create tensors out of constant variables that would be "
                   "the same every time you call this function. In any other case, this might cause the trace to "
                   "be incorrect.")

    def data_dependent(self, what: str) -> None:
        self._warn(f"Converting {what} might cause the trace to be incorrect. We can't record the data flow of "
                   "Python values, so this value will be treated as a constant in the future. This means that the "
                   "trace might not generalize to other inputs!")

    def _warn(self, message: str) -> None:
        loc = user_location()
        if loc is None:
            warnings.warn(message, TracerWarning, stacklevel=4)
        else:
            frame_file = _frame_file(loc)
            warnings.warn_explicit(message, TracerWarning, frame_file, loc.line)

    def finish(self) -> None:
        """Give every value recorded its dims for the graph, now that the dynamic dims are known: their
        symbols where a dim is one of them, None where it moves with them otherwise (trace_dims.py)."""
        for node in self.graph.block:
            for v in node.outputs:
                if isinstance(v.type, TensorType) and v.type.shape is not None and id(v) in self.dims.shapes:
                    v.type = TensorType(v.type.dtype, self.dims.final_shape(v, v.type.shape), v.type.device)
        for v, example in self.examples:
            v.type = self._input_type(example, self.dims.input_shape)

    # --- outputs -------------------------------------------------------------------------------
    def output_value(self, out) -> Value:
        if isinstance(out, Tensor):
            return self.value_of(out)
        if isinstance(out, tuple):
            items = [self.output_value(o) for o in out]
            return self._emit("prim::TupleConstruct", items, [TupleType(tuple(i.type for i in items))]).output
        if isinstance(out, list):
            items = [self.output_value(o) for o in out]
            elem = items[0].type if items else TensorType()
            return self._emit("prim::ListConstruct", items, [ListType(elem)]).output
        if isinstance(out, dict):
            if not all(isinstance(k, str) for k in out):
                raise TypeError("jit.trace: dict outputs need str keys")
            items = [self.output_value(v) for v in out.values()]
            elem = items[0].type if items else TensorType()
            flat = [x for key, item in zip(out, items) for x in (self.constant(key), item)]
            return self._emit("prim::DictConstruct", flat, [DictType(ScalarStr, elem)]).output
        if isinstance(out, (bool, int, float)) or out is None:
            # torch's tracer refuses them too: a constant output would not follow the inputs
            raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can be output "
                               "from traced functions")
        raise RuntimeError(f"Tracer cannot infer type of {out!r}\n:Only tensors and (possibly nested) tuples of "
                           "tensors, lists, or dicts are supported as inputs or outputs of traced functions")


def _common_type(types: list):
    """The one type of a list's items or a dict's values: tensors of different dtypes or dims as a
    Tensor of the dtype they share (if any)."""
    if all(t == types[0] for t in types):
        return types[0]
    if all(isinstance(t, TensorType) for t in types):
        return TensorType(types[0].dtype if all(t.dtype == types[0].dtype for t in types) else None)
    raise RuntimeError("jit.trace: the items of a list or dict example input must be of one type")


_NUMBER_KINDS = {Int: ("int", Int), Float: ("float", Float), Scalar: ("scalar", Scalar)}


def _joined(path: str, sub: str) -> str:
    return f"{path}.{sub}" if path and sub else path or sub


def _frame_file(loc: SourceLocation) -> str:
    frame = sys._getframe(1)
    while frame is not None:
        if os.path.basename(frame.f_code.co_filename) == loc.file and frame.f_lineno == loc.line:
            return frame.f_code.co_filename
        frame = frame.f_back
    return loc.file


ScalarStr = type_of_constant("")


def trace(fn_or_module, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs: list | None = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, example_kwarg_inputs: dict | None = None):
    """Record what `fn_or_module(*example_inputs)` computes as a graph (like torch.jit.trace).
    (`optimize`, deprecated in torch, and `_force_outplace`, torch's switch for recording in-place ops
    out of place, are accepted and change nothing: results are the same either way.) `example_kwarg_inputs` (a dict) traces a
    call by keyword instead: the traced result takes those parameters, by name or in the order the
    function declares them.

    Returns a TracedModule for an nn.Module (its parameters stay prim::GetAttr of self) or a
    ScriptFunction for a function. Python control flow is baked in; a tensor's value steering it
    warns (TracerWarning). check_trace re-runs the graph on the example inputs (and on each of
    `check_inputs`, tuples of inputs) and raises TracingCheckError if the outputs differ from
    eager. Example inputs are Tensors and (nested) tuples, lists and dicts of them; a dict output
    needs strict=False, as in torch (its keys are fixed by the trace).
    """
    from scriptc.nn import Module

    from .module import ScriptFunction, TracedModule

    is_module = isinstance(fn_or_module, Module)
    if not callable(fn_or_module):  # (torch's class; its words, "Could not get name of python class object", say less)
        raise RuntimeError(f"jit.trace traces a function or an nn.Module, got {type(fn_or_module).__name__}")
    call = fn_or_module.forward if is_module else fn_or_module
    if example_kwarg_inputs is not None or example_inputs is None:
        call, examples = keyword_call(call, example_kwarg_inputs, is_module)
    else:
        examples = example_tuple(example_inputs)
    # (as torch's check, the replay runs on copies made before tracing: code that writes to its
    # inputs in place has changed the examples by the time it is checked)
    check_examples = [cloned(examples)] + [cloned(example_tuple(c)) for c in check_inputs or ()] \
        if check_trace else []
    child_inputs: dict = {}
    with recording_child_inputs(fn_or_module, child_inputs) if is_module else contextlib.nullcontext():
        graph, eager_out, attributes, baked = trace_graph(
            fn_or_module if is_module else None, call,
            "forward" if is_module else getattr(fn_or_module, "__name__", "fn"), examples)
    if strict:
        refuse_dict_output(eager_out)
    if is_module:
        keyword = {"forward": traced_signature(call, len(examples))} if example_kwarg_inputs is not None else None
        traced = TracedModule(fn_or_module, {"forward": graph}, attributes=attributes, signatures=keyword)
        traced._child_inputs = child_inputs
    else:
        traced = ScriptFunction(graph, signature=traced_signature(call, len(examples)))
    sizes = example_sizes(graph, examples)
    traced.example_batch = sizes.pop(BATCH, None)
    traced.example_sizes = sizes or None
    traced.baked_dims = {"forward": baked} if is_module else baked
    for index, checked in enumerate(check_examples):
        if index:
            from scriptc.autograd import no_grad

            with no_grad():
                eager_out = call(*cloned(checked))
        check_trace_replay(traced, graph, checked, eager_out, check_tolerance)
    return traced


def trace_graph(module, call, name: str, examples: tuple) -> tuple[Graph, object, dict, tuple]:
    """The graph of what `call(*examples)` computes (a method of `module`, whose state stays
    prim::GetAttr of self, or a function when module is None), the eager result, the plain
    attributes ((submodule path, name) -> type) that scripted submodules inlined into it read, and
    the input dims it baked in (runtime.input_dims.BakedDim)."""
    from scriptc.autograd import no_grad
    from scriptc.passes.inline import inline

    tracer = Tracer(module, name)
    names = argument_names(call, len(examples))
    tracer.dims.add_candidates([tuple(t._data.shape) for t in tensors_in(examples)])
    for arg_name, x in zip(names, examples):
        tracer.add_input(x, arg_name)
    if _tensors._tracer[0] is not None:
        raise RuntimeError("jit.trace cannot be nested")
    _tensors._tracer[0] = tracer
    # The tracer keeps every intermediate alive; the cyclic GC rescanning them made tracing quadratic.
    gc_enabled = gc.isenabled()
    gc.disable()
    try:
        with no_grad():
            eager_out = call(*examples)
        tracer.finish()
        output = tracer.output_value(eager_out)
    finally:
        _tensors._tracer[0] = None
        if gc_enabled:
            gc.enable()
    tracer.graph.add_output(output)
    inline(tracer.graph, tracer.functions)
    verify(tracer.graph)
    return tracer.graph, eager_out, tracer.attributes, tuple(tracer.dims.baked_dims(examples))

