"""Grad modes: no_grad, enable_grad, set_grad_enabled and inference_mode, as PyTorch defines them.

Each is a context manager and a decorator (a decorated generator runs every step under the
mode); `no_grad`, `enable_grad` and `inference_mode` also decorate without parentheses. The
modes are thread-local. Tensors made while inference mode is on are inference tensors
(`Tensor.is_inference()`): they record no autograd history and cannot be updated in place
outside inference mode.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _GradMode(threading.local):
    enabled = True
    inference = False


_mode = _GradMode()

# Inference tensors by id; entries vanish with their tensors. Keyed by id rather than held in a
# WeakSet because a WeakSet compares members with ==, which Tensor overloads elementwise.
_inference_tensors: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def is_grad_enabled() -> bool:
    """Whether ops record autograd history in this thread."""
    return _mode.enabled


def is_inference_mode_enabled() -> bool:
    """Whether inference mode is on in this thread."""
    return _mode.inference


def mark_inference(tensors) -> None:
    """Record `tensors`, made under inference mode, as inference tensors."""
    for t in tensors:
        _inference_tensors[id(t)] = t


def is_inference(tensor) -> bool:
    """Whether `tensor` (or the tensor it is a view of) was made under inference mode."""
    if not _inference_tensors:
        return False
    for t in (tensor, tensor._base):
        if t is not None and _inference_tensors.get(id(t)) is t:
            return True
    return False


def _wrap_generator(make_context, gen_fn):
    """A generator function whose every resumption runs inside a fresh context from make_context."""

    @functools.wraps(gen_fn)
    def generator_context(*args, **kwargs):
        gen = gen_fn(*args, **kwargs)
        try:
            with make_context():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_context():
                        gen.close()
                    raise
                except BaseException:
                    with make_context():
                        response = gen.throw(*sys.exc_info())
                else:
                    with make_context():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


class _ModeContext:
    """A context manager usable as a decorator; subclasses say what `__enter__` sets."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise RuntimeError("Cannot decorate classes; it is ambiguous whether or not only the constructor or all "
                               "methods should have the context manager applied; decorate each method instead.")
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def decorate_context(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return decorate_context

    def clone(self) -> "_ModeContext":
        return type(self)()

    def __repr__(self) -> str:
        return f"<torch.autograd.grad_mode.{type(self).__name__} object at {id(self):#x}>"


class _NoParamModeContext(_ModeContext):
    """Also usable as a bare decorator: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class _GradSwitch(_NoParamModeContext):
    """Sets grad mode to the class's `enabled` inside the block."""

    enabled: bool

    def __enter__(self):
        self.prev = _mode.enabled
        _mode.enabled = self.enabled

    def __exit__(self, *exc) -> bool:
        _mode.enabled = self.prev
        return False


class no_grad(_GradSwitch):
    """Ops inside `with no_grad():` (or a decorated function) record no autograd history."""

    enabled = False


class enable_grad(_GradSwitch):
    """Re-enable autograd recording inside a no_grad region (or for a decorated function)."""

    enabled = True


class set_grad_enabled(_ModeContext):
    """Set grad mode to `mode`: at once when called as a function, for the block as a context
    manager, for each call as a decorator (which leaves the current mode as it was)."""

    def __init__(self, mode: bool):
        self.prev = _mode.enabled
        self.mode = bool(mode)
        _mode.enabled = self.mode

    def __call__(self, fn):
        _mode.enabled = self.prev
        return super().__call__(fn)

    def __enter__(self):
        _mode.enabled = self.mode

    def __exit__(self, *exc) -> bool:
        _mode.enabled = self.prev
        return False

    def clone(self) -> "set_grad_enabled":
        return type(self)(self.mode)

    def __repr__(self) -> str:
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_ModeContext):
    """Inference mode: like no_grad, and the tensors made inside are inference tensors.
    `inference_mode(False)` turns it off again (grad mode on) inside an inference region."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # bare @inference_mode on a function

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self.prev = (_mode.enabled, _mode.inference)
        _mode.enabled, _mode.inference = not self.mode, self.mode

    def __exit__(self, *exc) -> bool:
        _mode.enabled, _mode.inference = self.prev
        return False

    def clone(self) -> "inference_mode":
        return type(self)(self.mode)
