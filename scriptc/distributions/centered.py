"""CenteredAtLoc: mean and mode are the `loc` parameter (the symmetric unimodal families)."""

from __future__ import annotations

__all__ = ["CenteredAtLoc"]


class CenteredAtLoc:
    """For a family symmetric and unimodal about `loc`: mean and mode are both loc."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
