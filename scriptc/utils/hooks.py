"""RemovableHandle: what registering a hook returns, as torch.utils.hooks."""

from __future__ import annotations

import itertools
import weakref

_next_id = itertools.count()


class RemovableHandle:
    """Removes one registered hook from the dict it was registered in (`handle.remove()`, or leave
    a `with handle:` block). `extra_dict` names further dicts keyed by the same id."""

    def __init__(self, hooks_dict: dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_next_id)
        extras = [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict or ())
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
