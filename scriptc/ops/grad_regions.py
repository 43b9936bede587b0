"""`with torch.no_grad():` / `torch.enable_grad()` regions of scripted code: the grad mode switched on
entry and put back on exit, as eager code's context managers do; torch.is_grad_enabled() reads it."""

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


def _is_enabled() -> bool:
    from scriptc import grad_mode

    return grad_mode.is_grad_enabled()


python_op("grad_mode.is_enabled() -> bool", _is_enabled, fixed(Bool),
          "Whether grad mode is on (torch.is_grad_enabled() in scripted code).", effects=True)
