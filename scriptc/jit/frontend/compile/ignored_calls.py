"""Calls of functions scripted code leaves in Python: @torch.jit.ignore'd ones, run through
prim::Call with their arguments typed by their parameters, and @torch.jit.unused ones, which raise."""

from __future__ import annotations

import inspect

from scriptc.errors import ScriptError
from scriptc.ir.graph import Value


class IgnoredCalls:
    """Calls of ignored and unused functions."""

    def call_ignored(self, fn, args: list, kwargs: dict, node):
        """A @jit.ignore'd function: left in Python, called through prim::Call (such a module runs but
        cannot be saved). Its return annotation gives the result type (Tensor without one)."""
        name = self.ctx.register_ignored(fn)
        values = [self.as_value(a, node) for a in args]
        kw_values = {k: self.as_value(v, node) for k, v in kwargs.items()}
        values, kw_values = self.typed_ignored_arguments(fn, values, kw_values, node)
        returns = self.ctx.ignored_return_type(fn, self)
        return self.emit1("prim::Call", values + list(kw_values.values()), returns, {"function": name})

    def typed_ignored_arguments(self, fn, values: list, kw_values: dict, node) -> tuple[list, dict]:
        """The arguments of a call of an ignored function, each as the type its parameter declares
        (Tensor where it declares none), as torch checks them; its error where one does not fit."""
        try:
            bound = inspect.signature(fn).bind(*values, **kw_values)
            types = self.ctx.declared_parameter_types(fn, self)
        except (TypeError, ValueError, ScriptError):  # (*args, or annotations TorchScript cannot read: as given)
            return values, kw_values
        typed = {}
        for parameter, value in bound.arguments.items():
            expected = types.get(parameter)
            if expected is not None and isinstance(value, Value):
                value = self.coerce(value, expected, node, f"{fn.__name__}(): Expected a value of type '{expected}' for "
                                    f"argument '{parameter}' but instead found type '{value.type}'.")
            typed[parameter] = value
        positional = list(typed.values())[:len(values)]
        return positional, {k: typed[k] for k in kw_values}

    def call_unused(self, fn, node):
        self.emit("prim::RaiseException", [], [], {"message": f"RuntimeError: {fn.__qualname__} is a @torch.jit.unused "
                                                                "function and was called in scripted code"})
        returns = self.ctx.ignored_return_type(fn, self)
        return self.emit1("prim::Uninitialized", [], returns)
