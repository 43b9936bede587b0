"""The TorchScript fuser settings torch.jit exposes. scriptc's fusion pass (passes/fuse.py) compiles
fused groups for any shape, so these settings are recorded for code that sets and reads them; they
select no other fuser."""

from __future__ import annotations

import contextlib
import warnings

__all__ = ["set_fusion_strategy", "enable_onednn_fusion", "onednn_fusion_enabled", "strict_fusion",
           "optimized_execution"]

_strategy: list = [[("STATIC", 2), ("DYNAMIC", 10)]]
_onednn = [False]


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Set the fuser's specialization strategy, pairs ("STATIC" or "DYNAMIC", depth), and return the
    previous one (torch.jit.set_fusion_strategy). scriptc's fused kernels already take every shape."""
    try:
        pairs = [(str(kind), int(depth)) for kind, depth in strategy if isinstance(kind, str)]
        if len(pairs) != len(strategy):
            raise TypeError
    except (TypeError, ValueError):
        raise TypeError("_jit_set_fusion_strategy(): incompatible function arguments. The following argument types "
                        "are supported:\n    1. (arg0: collections.abc.Sequence[tuple[str, typing.SupportsInt | "
                        f"typing.SupportsIndex]]) -> list[tuple[str, int]]\n\nInvoked with: {strategy!r}") from None
    for kind, _ in pairs:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
    previous, _strategy[0] = _strategy[0], pairs
    return previous


def enable_onednn_fusion(enabled: bool) -> None:
    """Record whether oneDNN graph fusion is wanted (torch.jit.enable_onednn_fusion); scriptc has no
    oneDNN and fuses with its own codegen either way."""
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """What enable_onednn_fusion last set (False by default)."""
    return _onednn[0]


class strict_fusion:
    """torch.jit.strict_fusion: a block whose ops must all fuse in scripted code. Outside scripting
    it does nothing but warn, as torch's does."""

    def __init__(self) -> None:
        from scriptc.jit.markers import is_scripting
        if not is_scripting():
            warnings.warn("Only works in script mode", stacklevel=2)

    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        return None


@contextlib.contextmanager
def optimized_execution(should_optimize: bool):
    """torch.jit.optimized_execution: a block inside which torch's graph executor does not profile and
    re-optimize scripted calls. scriptc's scripted calls run the graph as compiled (optimization is
    optimize_for_inference's), so the block computes the same either way and should_optimize changes
    nothing."""
    yield
