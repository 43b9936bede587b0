"""How torch functions meet Proxies. torch routes them through `__torch_function__`; scriptc has no
such protocol, so while recording is on, each function of the public torch namespaces (torch,
torch.nn.functional, torch.special, torch.linalg, torch.fft) runs a different body: one that records
a call_function node when an argument holds a Proxy and runs the original body otherwise. The
function object stays the same (its `__code__` is swapped), so `node.target is torch.relu` and names
imported with `from torch.nn.functional import relu` behave as in torch. A Tensor's binary operators
meeting a Proxy record torch's Tensor method.

Recording is on for the length of a symbolic trace and of Transformer.transform(), and while a
Proxy made around a raw Node (building a graph by hand, inlining with Proxies), or one derived from
it, is alive. Each public function call then costs one scan of its arguments.
"""

from __future__ import annotations

import contextlib
import functools
import types
import weakref
from typing import Any, Callable

from scriptc.fx.names import PUBLIC_NAMESPACES, public_functions, remember_public_names

__all__ = ["recording_torch_functions", "record_torch_functions_while_alive", "RecordingFunction", "find_proxy"]


def find_proxy(*values):
    """The first Proxy inside values (nested tuples, lists and dicts included), or None."""
    from scriptc.fx.proxy import Proxy
    for value in values:
        if isinstance(value, Proxy):
            return value
        if isinstance(value, (tuple, list)):
            found = find_proxy(*value)
        elif isinstance(value, dict):
            found = find_proxy(*value.values())
        else:
            continue
        if found is not None:
            return found
    return None


class RecordingFunction:
    """What an fx.wrap()'d or autowrapped (math) global becomes in its module's globals during a trace:
    it records a call_function node (of the function it wraps) when an argument holds a Proxy and runs
    the function otherwise. It compares and hashes equal to the wrapped function."""

    def __init__(self, original: Callable, mark_wrapped: bool) -> None:
        functools.update_wrapper(self, original)
        self._mark_wrapped = mark_wrapped

    def __call__(self, *args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is None:
            return self.__wrapped__(*args, **kwargs)
        result = proxy.tracer.create_proxy("call_function", self.__wrapped__, args, kwargs)
        if self._mark_wrapped:
            result.node.meta["is_wrapped"] = True
        return result

    def __eq__(self, other) -> bool:
        return other is self or other is self.__wrapped__

    def __hash__(self) -> int:
        return hash(self.__wrapped__)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


def unwrap_recording(target):
    """The function a node should record: the original behind a RecordingFunction."""
    return target.__wrapped__ if isinstance(target, RecordingFunction) else target


# torch functions that never dispatch to a Proxy: they answer for it (torch.is_tensor(proxy) is False).
_PLAIN_PYTHON_FUNCTIONS = {"is_tensor", "is_storage"}
# A Tensor operator meeting a Proxy records the Tensor method torch dispatches it to (`t + x` is t.add(x)).
_TENSOR_OPERATOR_METHODS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__pow__": "pow",
    "__mod__": "remainder", "__matmul__": "matmul", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__floordiv__": "__floordiv__", "__and__": "__and__", "__or__": "__or__",
    "__xor__": "__xor__", "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__getitem__": "__getitem__",
}


def _recording_tensor_operator(original: Callable, method: str) -> Callable:
    """A Tensor operator that records `tensor.<method>(other)` when other holds a Proxy."""
    @functools.wraps(original)
    def operator_method(self, other):
        proxy = find_proxy(other)
        if proxy is None:
            return original(self, other)
        return proxy.tracer.create_proxy("call_method", method, (self, other), {})
    return operator_method


class Patcher:
    """Replaces dict entries and class attributes for the length of a trace, then restores them."""

    _MISSING = object()

    def __init__(self) -> None:
        self._undo: list[tuple[dict | type, str, Any]] = []

    def patch(self, frame_dict: dict, name: str, new_value) -> None:
        self._undo.append((frame_dict, name, frame_dict.get(name, self._MISSING)))
        frame_dict[name] = new_value

    def patch_method(self, cls: type, name: str, new_value) -> None:
        self._undo.append((cls, name, cls.__dict__.get(name, self._MISSING)))
        setattr(cls, name, new_value)

    def patch_code(self, fn: types.FunctionType, code: types.CodeType) -> None:
        self._undo.append((fn, "__code__", fn.__code__))
        fn.__code__ = code

    def restore(self) -> None:
        while self._undo:
            target, name, old = self._undo.pop()
            if isinstance(target, dict):
                if old is self._MISSING:
                    target.pop(name, None)
                else:
                    target[name] = old
            elif old is self._MISSING:
                delattr(target, name)
            else:
                setattr(target, name, old)


_STATE: dict[str, Any] = {"users": 0, "patcher": None}
# A constant in the recording body's code, replaced by the function's dispatcher.
_DISPATCH_MARK = "scriptc.fx recording dispatch"


@functools.cache
def _recording_body(free_variables: int) -> types.CodeType:
    """The code of `(*args, **kwargs) -> dispatcher(*args, **kwargs)` for a function with this many
    closure cells (a function's code may only be swapped for code with as many free variables)."""
    cells = [f"_cell{i}" for i in range(free_variables)]
    touch = f"        if args is None:\n            {', '.join(cells)},\n" if cells else ""
    source = (f"def _outer({', '.join(cells)}):\n    def recording(*args, **kwargs):\n{touch}"
              f"        return {_DISPATCH_MARK!r}.__call__(*args, **kwargs)\n    return recording\n")
    namespace: dict = {}
    exec(source, namespace)
    return namespace["_outer"](*([None] * free_variables)).__code__


class _Dispatch:
    """What a public torch function runs while recording: a node for Proxy arguments, else its body."""

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn
        self.body = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        self.body.__kwdefaults__ = fn.__kwdefaults__

    def __call__(self, *args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is None:
            return self.body(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", self.fn, args, kwargs)


# id(function) -> (its code, its recording code): built once per function and process.
_RECORDING_CODES: dict[int, tuple[types.CodeType, types.CodeType]] = {}


def _recording_code(fn: types.FunctionType) -> types.CodeType:
    cached = _RECORDING_CODES.get(id(fn))
    if cached is None or cached[0] is not fn.__code__:
        template = _recording_body(len(fn.__code__.co_freevars))
        constants = tuple(_Dispatch(fn) if isinstance(c, str) and c == _DISPATCH_MARK else c
                          for c in template.co_consts)
        cached = _RECORDING_CODES[id(fn)] = (fn.__code__, template.replace(
            co_consts=constants, co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname))
    return cached[1]


def _install() -> None:
    if _STATE["patcher"] is None:
        from scriptc.tensors import Tensor
        remember_public_names()
        patcher = Patcher()
        swapped: set[int] = set()
        for _public, module_name in PUBLIC_NAMESPACES:
            for name, fn in public_functions(module_name).items():
                if isinstance(fn, types.FunctionType) and name not in _PLAIN_PYTHON_FUNCTIONS and id(fn) not in swapped:
                    swapped.add(id(fn))
                    patcher.patch_code(fn, _recording_code(fn))
        for dunder, method in _TENSOR_OPERATOR_METHODS.items():
            patcher.patch_method(Tensor, dunder, _recording_tensor_operator(getattr(Tensor, dunder), method))
        _STATE["patcher"] = patcher
    _STATE["users"] += 1


def _release() -> None:
    _STATE["users"] -= 1
    if _STATE["users"] == 0:
        _STATE["patcher"].restore()
        _STATE["patcher"] = None


@contextlib.contextmanager
def recording_torch_functions():
    """Torch functions record nodes for Proxy arguments within this block (re-entrant)."""
    _install()
    try:
        yield
    finally:
        _release()


def record_torch_functions_while_alive(owner: object) -> None:
    """Torch functions record nodes for Proxy arguments until `owner` is garbage collected."""
    _install()
    weakref.finalize(owner, _release)
