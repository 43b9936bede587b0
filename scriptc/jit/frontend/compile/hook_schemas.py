"""torch's checks of a module's forward pre-hooks and hooks when it is scripted: each hook's declared
input tuple against forward's parameters, a pre-hook's declared result, a hook's output parameter
against what forward (or the hook before it) returns, and the hooks' names."""

from __future__ import annotations

from scriptc.types import NoneType, TupleType

from .types import assignable


class HookSchemas:
    """The checks call_module runs on the hooks of the module it calls, in torch's words."""

    def forward_parameter_types(self, forward) -> list | None:
        """forward's declared parameter types after self (None: unreadable, nothing is checked)."""
        try:
            return self.ctx.method_types(forward)[0]
        except Exception:  # noqa: BLE001 - (inlining forward reports what is wrong with it)
            return None

    def check_hook_names(self, owner, node) -> None:
        """Two different functions registered under one name are refused, as torch names hooks by
        their function's name."""
        module = owner.module
        for kind, hooks in (("Pre-hook", module._forward_pre_hooks), ("Hook", module._forward_hooks)):
            first: dict = {}
            for hook in hooks.values():
                fn = getattr(hook, "__func__", hook)
                name = getattr(fn, "__name__", "")
                if first.setdefault(name, fn) is not fn:
                    raise self.error(f"{kind} '{name}' on {type(module).__name__} has at least two different "
                                     "python definitions. Please use unique names for all hooks.", node)

    def check_hooks_against_methods(self, owner, node) -> None:
        """A hook named as a method compiled for its module is refused (torch keeps both on the
        module's type, by name)."""
        compiled = {name for path, name in self.ctx.inlined_methods if path == owner.path}
        module = owner.module
        for hook in [*module._forward_pre_hooks.values(), *module._forward_hooks.values()]:
            name = getattr(getattr(hook, "__func__", hook), "__name__", "")
            if name in compiled:
                raise self.error(f"Can't define hook: {name} on class: __torch__.{type(module).__qualname__} because "
                                 "a method or hook with that name already exists.", node)

    def check_pre_hook(self, owner, fn, forward_types: list | None, node) -> None:
        hook_types = self._hook_types(fn)
        if forward_types is None or hook_types is None:
            return
        params, returns = hook_types
        hook_id, context = self._hook_words(owner, fn, "Pre-hook", "forward pre-hook")
        if len(params) != 1:
            raise self.error(f"{hook_id}was expected to only have exactly 2 inputs but it had {len(params) + 1} "
                             f"inputs. {context}", node)
        self._check_hook_input(params[0], forward_types, hook_id, context, node)
        if returns is None:
            raise self.error(f"{hook_id}is missing a return annotation. Return annotations are required, please add "
                             f"one.\n{context}", node)
        if returns == NoneType:
            return
        wrong = f"{hook_id}returned the wrong type of: '{returns}'."
        if len(forward_types) == 1 and returns == forward_types[0]:
            if isinstance(returns, TupleType):
                raise self.error(f"{wrong} When forward has a single tuple input argument, the return needs to be "
                                 "'None' or a nested tuple containing forward's input tuple argument as in: "
                                 f"'Tuple[{forward_types[0]}]'.\n{context}", node)
            return
        if not isinstance(returns, TupleType):
            raise self.error(f"{wrong}{context}", node)
        if not forward_types and returns.elems:
            raise self.error(f"{wrong} Was expecting either 'None' or 'Tuple[()]' since forward had no arguments.\n"
                             f"{context}", node)
        if len(returns.elems) != len(forward_types):
            raise self.error(f"{wrong} The returned tuple contains the wrong number of contained types.\n{context}",
                             node)
        if any(r != f for r, f in zip(returns.elems, forward_types)):
            raise self.error(f"{wrong} The returned tuple contains the wrong inner types.\n{context}", node)

    def check_forward_hook(self, owner, fn, forward_types: list | None, output_type, node) -> None:
        hook_types = self._hook_types(fn)
        if forward_types is None or hook_types is None:
            return
        params, _ = hook_types
        hook_id, context = self._hook_words(owner, fn, "Hook", "forward hook")
        if len(params) != 2:
            raise self.error(f"{hook_id}was expected to only have exactly 3 inputs but it had {len(params) + 1} "
                             f"inputs. {context}", node)
        self._check_hook_input(params[0], forward_types, hook_id, context, node)
        if params[1] != output_type and not assignable(output_type, params[1]):
            raise self.error(f"{hook_id}has the wrong type for the output argument. Received type: '{params[1]}'. "
                             f"Expected type: '{output_type}'.\n{context}", node)

    def _check_hook_input(self, declared, forward_types: list, hook_id: str, context: str, node) -> None:
        if not isinstance(declared, TupleType):
            raise self.error(f"{hook_id}expected the input argument to be typed as a Tuple but found type: "
                             f"'{declared}' instead.\n{context}", node)
        if not forward_types and declared.elems:
            raise self.error(f"{hook_id}was expecting Tuple[()] as the input type. Received type: '{declared}'.\n"
                             f"{context}", node)
        if len(declared.elems) != len(forward_types):
            raise self.error(f"{hook_id}has the wrong number of contained types for the input argument's Tuple. "
                             f"Received type: '{declared}'.\n{context}", node)
        if any(d != f for d, f in zip(declared.elems, forward_types)):
            raise self.error(f"{hook_id}has the wrong inner types for the input tuple argument. Received type: "
                             f"'{declared}'.\n{context}", node)

    def _hook_types(self, fn):
        try:
            return self.ctx.method_types(fn)
        except Exception:  # noqa: BLE001 - (inlining the hook reports what is wrong with its annotations)
            return None

    @staticmethod
    def _hook_words(owner, fn, kind: str, what: str) -> tuple[str, str]:
        module = type(owner.module).__name__
        return (f"{kind} '{fn.__name__}' on module '{module}' ",
                f"This error occurred while scripting the {what} '{fn.__name__}' on module '{module}'. If you did not "
                f"want to script this {what.split()[-1]} remove it from the original NN module before scripting.")
