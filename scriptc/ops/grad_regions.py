"""`with torch.no_grad():` / `torch.enable_grad()` regions of scripted code: the grad mode switched on
entry and put back on exit, as eager code's context managers do."""

from __future__ import annotations

from scriptc.types import Bool

from .pyvalues import fixed, python_op


def _switch(enabled: bool) -> bool:
    from scriptc import grad_mode

    previous = grad_mode.is_grad_enabled()
    grad_mode.set_grad_enabled(enabled)
    return previous


python_op("grad_mode.switch(enabled: bool) -> bool", _switch, fixed(Bool),
          "Set grad mode for the ops that follow (a with torch.no_grad() region's entry, or its exit "
          "restoring the mode it found); returns the mode it replaced.", effects=True)
