"""torch.jit._recursive's entry points that torch's own code and tests call."""

from __future__ import annotations

from .api import _prepare_scriptable, methods_to_compile, script_module
from .module_values import module_state_copy


def infer_methods_to_compile(nn_module) -> dict:
    """The methods jit.script compiles for `nn_module`: forward and the @jit.export'ed ones."""
    return methods_to_compile(nn_module)


def create_script_module(nn_module, stubs_fn, share_types: bool = True, is_tracing: bool = False):
    """`nn_module` scripted with the methods `stubs_fn(nn_module)` names; `share_types=False` gives it
    and its submodules types of their own (torch.jit._recursive.create_script_module)."""
    return script_module(module_state_copy(_prepare_scriptable(nn_module, {})), methods=stubs_fn(nn_module),
                         share_types=share_types)
