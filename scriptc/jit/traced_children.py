"""The submodules of a traced module as traced modules of their own (torch's `traced.child.code`).

jit.trace records one graph for the whole module; torch's tracer also gives each submodule it
called a graph of what that submodule did. Here the trace notes the inputs each direct child got
on its first call, and `traced.child` traces the child on them when first read - with its state
(running statistics) and the random generator put back, so that reading it changes nothing.
"""

from __future__ import annotations

import contextlib
import warnings

from scriptc.errors import TracerWarning
from scriptc.tensors import Tensor


@contextlib.contextmanager
def recording_child_inputs(module, into: dict):
    """While the trace runs: `into[name]` = the tensor arguments of child `name`'s first call (a
    child called with anything else - keywords, None, numbers - is left out)."""
    def hook_for(name):
        def record(_module, args):
            if name not in into and args and all(_tensors_only(a) for a in args):
                into[name] = tuple(args)
        return record

    from .loaded_module import LoadedModule

    # (a jit.load'ed child is compiled already, and refuses hooks as torch's loaded modules do)
    handles = [child.register_forward_pre_hook(hook_for(name)) for name, child in module.named_children()
               if not isinstance(child, LoadedModule)]
    try:
        yield into
    finally:
        for handle in handles:
            handle.remove()


def _tensors_only(value) -> bool:
    if isinstance(value, Tensor):
        return True
    return isinstance(value, (tuple, list)) and bool(value) and all(_tensors_only(v) for v in value)


def trace_child(child, example: tuple):
    """`child` traced on the inputs it got in its parent's trace, leaving its state and the random
    generator as they were (the parent's trace already warned about what it baked in)."""
    from scriptc.random import get_rng_state, set_rng_state

    from .trace import trace

    state = {k: v.detach().clone() for k, v in child.state_dict().items()}
    rng = get_rng_state()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TracerWarning)
            return trace(child, example, check_trace=False)
    finally:
        child.load_state_dict(state)
        set_rng_state(rng)
