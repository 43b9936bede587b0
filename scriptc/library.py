"""torch.library: operators defined in Python, as PyTorch's custom-ops tutorial writes them.

`@torch.library.custom_op("mylib::name", mutates_args=())` turns a function of tensors into an
operator: callable directly and as `torch.ops.mylib.name`, with `register_fake` (the output's
shape and dtype without computing it), `register_autograd` (its backward), `register_kernel`
(a per-device implementation) and `torch.library.opcheck` to test the registrations. The
`Library("mylib", "DEF")` / `.define(schema)` / `.impl(name, fn, key)` form registers the same
kind of operator from a schema string.

The kernel of an operator is opaque to autograd: it runs with grad off, and a gradient flows only
through a registered backward (backpropagating through an op without one is torch's RuntimeError).
A kernel registered for CompositeImplicitAutograd or Autograd runs with grad on instead: it is made
of differentiable ops, or handles its gradient itself.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from scriptc import autograd
from scriptc.ops.aten_namespace import custom_namespace
from scriptc.tensors import Tensor

__all__ = ["CustomOpDef", "Library", "custom_op", "define", "impl", "infer_schema", "opcheck", "register_autograd",
           "register_fake", "register_kernel"]

# dispatch keys whose kernel runs with grad on (it decomposes into differentiable ops, or is the
# autograd kernel itself); every other key's kernel is opaque
_DIFFERENTIABLE_KEYS = {"CompositeImplicitAutograd", "Autograd", "AutogradCPU"}
_FAKE_KEYS = {"Meta"}
_OPS: dict[str, "CustomOpDef"] = {}


@dataclass(frozen=True)
class _Arg:
    name: str
    type_text: str
    default: Any
    has_default: bool
    kwarg_only: bool
    mutated: bool


def _split_args(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _parse_args(schema: str, qualname: str) -> list[_Arg]:
    """The arguments of a torch schema string `(Tensor x, int[] box, *, float eps=1e-5) -> Tensor`."""
    head = schema.partition("->")[0].strip()
    if not (head.endswith(")") and "(" in head):
        raise RuntimeError(f"Invalid schema for {qualname}: expected '(arguments) -> returns', got {schema!r}")
    args, kwarg_only = [], False
    for part in _split_args(head[head.index("(") + 1:-1]):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        type_text, _, name = decl.strip().rpartition(" ")
        if not type_text or not name.isidentifier():
            raise RuntimeError(f"Invalid schema for {qualname}: cannot read the argument {part!r}")
        value = {"None": None, "True": True, "False": False}.get(default.strip(), default.strip())
        if eq and isinstance(value, str):
            try:
                value = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                value = value.strip("'\"")
        args.append(_Arg(name, type_text, value, bool(eq), kwarg_only, "!" in type_text))
    return args


_ANNOTATION_TYPES = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
                     typing.Optional[Tensor]: "Tensor?", typing.Optional[int]: "SymInt?",
                     typing.Optional[float]: "float?", typing.Optional[bool]: "bool?", typing.Optional[str]: "str?",
                     list[Tensor]: "Tensor[]", list[int]: "SymInt[]", list[float]: "float[]", list[bool]: "bool[]",
                     typing.List[Tensor]: "Tensor[]", typing.List[int]: "SymInt[]", typing.List[float]: "float[]",
                     typing.Sequence[Tensor]: "Tensor[]", typing.Sequence[int]: "SymInt[]",
                     typing.Optional[list[Tensor]]: "Tensor[]?", typing.Optional[list[int]]: "SymInt[]?"}


def _annotation_text(annotation, what: str) -> str:
    if annotation is inspect.Parameter.empty:
        raise ValueError(f"infer_schema(func): {what} must have a type annotation.")
    if isinstance(annotation, str):
        annotation = {"Tensor": Tensor, "int": int, "float": float, "bool": bool, "str": str}.get(annotation,
                                                                                               annotation)
    text = _ANNOTATION_TYPES.get(annotation)
    if text is None:
        raise ValueError(f"infer_schema(func): {what} has unsupported type {annotation}. The valid types are: "
                         "Tensor, int, float, bool, str, their Optional forms and lists of them.")
    return text


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema torch would write for a function from its type annotations: `(Tensor x) -> Tensor`
    (mutated tensors marked `Tensor(a0!)`), prefixed with op_name when given."""
    signature = inspect.signature(prototype_function)
    mutated = set() if mutates_args == "unknown" else set(mutates_args)
    unknown = mutated - set(signature.parameters)
    if unknown:
        raise ValueError(f"{sorted(unknown)} in mutates_args were not found in the custom op's signature. "
                         f"mutates_args should contain the names of all args that the custom op mutates.")
    parts, star = [], False
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError("infer_schema(func): We don't support varargs or varkwargs. Got func with "
                             "signature " + str(signature))
        text = _annotation_text(param.annotation, f"Parameter {name}")
        if name in mutated or mutates_args == "unknown" and text.startswith("Tensor"):
            text = text.replace("Tensor", f"Tensor(a{index}!)", 1)
        if param.kind == param.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if param.default is not inspect.Parameter.empty:
            text += f" {name}={param.default!r}".replace("'", '"') if param.default is not None else f" {name}=None"
        else:
            text += f" {name}"
        parts.append(text)
    returns = signature.return_annotation
    if returns is None or returns is type(None):
        ret_text = "()"
    elif typing.get_origin(returns) is tuple:
        ret_text = "(" + ", ".join(_annotation_text(r, "the return") for r in typing.get_args(returns)) + ")"
    else:
        ret_text = _annotation_text(returns, "the return")
    return f"{op_name or ''}({', '.join(parts)}) -> {ret_text}"


def _tensors(values) -> list[Tensor]:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(_tensors(v))
    return out


def _detached(value):
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_detached(v) for v in value)
    return value


class CustomOpDef:
    """An operator defined in Python (`torch.library.custom_op` or `Library.define`); call it like a
    function, or as `torch.ops.<namespace>.<name>` (`.default` is the same operator)."""

    def __init__(self, qualname: str, schema: str, kernel: Callable | None = None, differentiable: bool = False):
        namespace, sep, name = qualname.partition("::")
        if not sep or not namespace.isidentifier() or not name.replace(".", "_").isidentifier():
            raise ValueError(f"Expected the op's name to be of the form 'namespace::name', got '{qualname}'")
        self._namespace, self._name, self._qualname = namespace, name, qualname
        self._schema = schema
        self._args = _parse_args(schema, qualname)
        self._kernel, self._differentiable = kernel, differentiable
        self._device_kernels: dict[str, Callable] = {}
        self._fake: Callable | None = None
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self.__name__ = name
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    @property
    def default(self) -> "CustomOpDef":
        return self

    @property
    def _schema_text(self) -> str:
        return f"{self._qualname}{self._schema}"

    # --- registrations ---------------------------------------------------------------------
    def register_fake(self, fn: Callable) -> Callable:
        """fn(*args) returns empty tensors of the outputs' shapes and dtypes (what tracing tools read)."""
        self._fake = fn
        return fn

    def register_kernel(self, device_types, fn: Callable | None = None):
        """The implementation for the given device type(s) ("cpu", "cuda"); usable as a decorator."""
        def register(func):
            for device in [device_types] if isinstance(device_types, str) or device_types is None else device_types:
                self._device_kernels["cpu" if device is None else str(device)] = func
            return func
        return register if fn is None else register(fn)

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """backward(ctx, *grads) returns one gradient per input (None for non-tensors);
        setup_context(ctx, inputs, output) saves what backward needs."""
        self._backward, self._setup_context = backward, setup_context

    # --- calling ---------------------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> list:
        positional = [a for a in self._args if not a.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(f"{self._qualname}() takes {len(positional)} positional arguments but {len(args)} "
                            "were given")
        values = list(args)
        for arg in self._args[len(args):]:
            if arg.name in kwargs:
                values.append(kwargs.pop(arg.name))
            elif arg.has_default:
                values.append(arg.default)
            else:
                raise TypeError(f"{self._qualname}() missing required argument: '{arg.name}'")
        if kwargs:
            raise TypeError(f"{self._qualname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
        return values

    def _run_kernel(self, values: list):
        kernel = self._device_kernels.get("cpu", self._kernel)
        if kernel is None:
            raise NotImplementedError(f"{self._qualname}: no implementation registered for the CPU device; "
                                      "register one with register_kernel or Library.impl")
        if not self._differentiable:  # an opaque kernel runs below autograd, as torch's: no grad on its tensors
            values = [_detached(v) for v in values]
        by_name = {a.name: v for a, v in zip(self._args, values)}
        positional = [v for a, v in zip(self._args, values) if not a.kwarg_only]
        keywords = {a.name: by_name[a.name] for a in self._args if a.kwarg_only}
        result = kernel(*positional, **keywords)
        for arg, value in zip(self._args, values):
            if arg.mutated and isinstance(value, Tensor):
                value._vc[0] += 1
        return result

    def __call__(self, *args, **kwargs):
        values = self._bind(args, dict(kwargs))
        if self._differentiable and self._backward is None:
            return self._run_kernel(values)
        needs_grad = autograd.is_grad_enabled() and any(t.requires_grad for t in _tensors(values))
        if not needs_grad:
            with autograd.no_grad():
                return self._run_kernel(values)
        return self._autograd_function().apply(*values)

    def _autograd_function(self):
        op = self

        def forward(*values):
            with autograd.no_grad():
                return op._run_kernel(list(values))

        def setup_context(ctx, inputs, output):
            if op._setup_context is not None:
                op._setup_context(ctx, inputs, output)

        def backward(ctx, *grads):
            if op._backward is None:
                raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but no autograd "
                                   "formula was registered. Please use register_autograd to add one.")
            result = op._backward(ctx, *grads)
            return result if isinstance(result, tuple) else (result,)

        return type(f"{self._name}_autograd", (autograd.Function,),
                    {"forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
                     "backward": staticmethod(backward)})


def _register(op: CustomOpDef) -> CustomOpDef:
    if op._qualname in _OPS:
        raise RuntimeError(f"Tried to register an operator ({op._qualname}{op._schema}) with the same name and "
                           "overload name multiple times.")
    _OPS[op._qualname] = op
    setattr(custom_namespace(op._namespace), op._name, op)
    return op


def _lookup(op, what: str) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str) and op in _OPS:
        return _OPS[op]
    raise ValueError(f"{what}(op): expected an operator defined with torch.library (a CustomOpDef or its "
                     f"'namespace::name'), got {op!r}")


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None):
    """Make `fn` (a function of tensors with type annotations) the operator `name` ("mylib::op");
    mutates_args names the arguments it writes to. Usable as a decorator."""
    def make(func: Callable) -> CustomOpDef:
        op_schema = schema if schema is not None else infer_schema(func, mutates_args=mutates_args)
        op = _register(CustomOpDef(name, op_schema, None if device_types is not None else func))
        if device_types is not None:
            op.register_kernel(device_types, func)
        return op
    return make if fn is None else make(fn)


def define(qualname: str, schema: str, *, lib=None, tags: Sequence = ()) -> None:
    """Declare the operator `qualname` with a schema `(Tensor x) -> Tensor`; implement it with impl."""
    _register(CustomOpDef(qualname, schema))


def _register_impl(op: CustomOpDef, key: str, fn: Callable) -> None:
    if key in _FAKE_KEYS:
        op.register_fake(fn)
    elif key in ("CPU", "cpu", "", "CompositeExplicitAutograd", "Default") or key in _DIFFERENTIABLE_KEYS:
        op._kernel = fn
        op._differentiable = key in _DIFFERENTIABLE_KEYS
    elif key.lower() in ("cuda", "mps", "xpu"):
        op.register_kernel(key.lower(), fn)
    else:
        raise ValueError(f"impl: unknown dispatch key '{key}' for {op._qualname}")


def impl(qualname: str, types, func: Callable | None = None, *, lib=None):
    """Register `func` as the implementation of `qualname` for the device type or dispatch key `types`
    ("cpu", "CompositeImplicitAutograd", ...); usable as a decorator."""
    def register(fn):
        op = _lookup(qualname, "impl")
        for key in [types] if isinstance(types, str) else list(types):
            _register_impl(op, key, fn)
        return fn
    return register if func is None else register(func)


def register_fake(op, func: Callable | None = None, /, *, lib=None, _stacklevel: int = 1):
    """Register the fake (shape and dtype only) implementation of an operator; usable as a decorator."""
    def register(fn):
        return _lookup(op, "register_fake").register_fake(fn)
    return register if func is None else register(func)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None, lib=None) -> None:
    """Register backward (and setup_context) for an operator, as CustomOpDef.register_autograd."""
    _lookup(op, "register_autograd").register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, func: Callable | None = None, /, *, lib=None):
    """Register an operator's implementation for device types; usable as a decorator."""
    return _lookup(op, "register_kernel").register_kernel(device_types, func)


class Library:
    """torch.library.Library(namespace, kind): "DEF" declares a new namespace's operators,
    "FRAGMENT" adds to one, "IMPL" implements operators declared elsewhere."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Sequence = ()) -> str:
        """Declare an operator `name(Tensor x) -> Tensor` in this library's namespace; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f"define() is not allowed on a Library of kind IMPL (namespace {self.ns})")
        name, _, rest = schema.partition("(")
        _register(CustomOpDef(f"{self.ns}::{name.strip()}", "(" + rest))
        return name.strip()

    def impl(self, op_name, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Register fn as the kernel of `op_name` (a name in this namespace, or an operator) for a key."""
        op = op_name if isinstance(op_name, CustomOpDef) else _lookup(
            op_name if "::" in op_name else f"{self.ns}::{op_name}", "impl")
        _register_impl(op, dispatch_key or self.dispatch_key, fn)

    def _register_fake(self, op_name: str, fn: Callable, _stacklevel: int = 1) -> None:
        _lookup(op_name if "::" in op_name else f"{self.ns}::{op_name}", "register_fake").register_fake(fn)


class OpCheckError(Exception):
    """An operator registration that opcheck found wrong."""


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=None, raise_exception: bool = True,
            atol=None, rtol=None) -> dict:
    """Check an operator's registrations on one example: that it mutates only the arguments its schema
    says (test_schema), that tensors needing grad reach a registered backward (test_autograd_registration),
    that the fake implementation gives the real outputs' shapes and dtypes (test_faketensor), and that a
    second call gives the same result (test_aot_dispatch_dynamic). Returns {test: "SUCCESS" | error}."""
    custom = _lookup(op, "opcheck")
    kwargs = dict(kwargs or {})
    values = custom._bind(tuple(args), dict(kwargs))
    results: dict[str, Any] = {}

    def run(test: str, check: Callable[[], None]) -> None:
        try:
            check()
            results[test] = "SUCCESS"
        except Exception as error:  # noqa: BLE001  (each check's failure is reported, or raised below)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {test} failed with {error}") from error
            results[test] = error

    def schema_check():
        copies = [v.detach().clone() if isinstance(v, Tensor) else v for v in values]
        with autograd.no_grad():
            custom(*copies)
        for arg, original, copy in zip(custom._args, values, copies):
            if isinstance(original, Tensor) and not arg.mutated and not (
                    original.shape == copy.shape and bool((original.detach() == copy).all())):
                raise RuntimeError(f"{custom._qualname} mutated the argument '{arg.name}', which its schema "
                                   "does not mark as mutated (add it to mutates_args)")

    def autograd_check():
        if custom._backward is None and not custom._differentiable and any(
                t.requires_grad for t in _tensors(values)):
            raise RuntimeError(f"{custom._qualname}: an input requires grad but no autograd formula is "
                               "registered (torch.library.register_autograd)")

    def fake_check():
        if custom._fake is None:
            return
        with autograd.no_grad():
            real = custom(*[v.detach().clone() if isinstance(v, Tensor) else v for v in values])
            fake = custom._fake(*values)
        real_list, fake_list = _tensors([real]), _tensors([fake])
        if [(tuple(t.shape), t.dtype) for t in real_list] != [(tuple(t.shape), t.dtype) for t in fake_list]:
            raise RuntimeError(f"{custom._qualname}: the fake implementation's outputs "
                               f"{[(tuple(t.shape), t.dtype) for t in fake_list]} differ from the real ones "
                               f"{[(tuple(t.shape), t.dtype) for t in real_list]}")

    def repeat_check():
        with autograd.no_grad():
            first = _tensors([custom(*[v.detach().clone() if isinstance(v, Tensor) else v for v in values])])
            second = _tensors([custom(*[v.detach().clone() if isinstance(v, Tensor) else v for v in values])])
        for a, b in zip(first, second):
            if a.shape != b.shape or not bool(a.isclose(b, rtol=rtol or 1e-5, atol=atol or 1e-8,
                                                        equal_nan=True).all()):
                raise RuntimeError(f"{custom._qualname} gave different results for the same inputs")

    run("test_schema", schema_check)
    run("test_autograd_registration", autograd_check)
    run("test_faketensor", fake_check)
    run("test_aot_dispatch_dynamic", repeat_check)
    return results
