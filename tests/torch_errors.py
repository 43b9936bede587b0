"""Comparing misuse with torch: the same calls must raise the same exception type and message."""

from __future__ import annotations


def raised(build):
    """(type, message) of what build() raises (scriptc's names spelled as torch's), None when it returns."""
    try:
        build()
    except Exception as error:  # whatever either library raises is what is compared
        return type(error), str(error).replace("scriptc.", "torch.")
    return None


def assert_misuse_like_torch(ours: list, theirs: list) -> None:
    """Each of `theirs` raises in torch, and the matching one of `ours` raises the same."""
    assert len(ours) == len(theirs)
    for index, (mine, reference) in enumerate(zip(ours, theirs)):
        expected = raised(reference)
        assert expected is not None, f"misuse {index} does not raise in torch"
        assert raised(mine) == expected, f"misuse {index}"
