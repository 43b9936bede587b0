"""Script source the compiler inlines where an operation on script-class objects has no op: sorting
by the class's own `__lt__` (list.sort(), sorted()). Each is compiled into the caller's block with
its parameters bound to the caller's values, like an inlined method."""

from __future__ import annotations


def sort_by_lt(items, reverse: bool):
    # insertion sort: stable, as list.sort is, and needs only `<`
    for i in range(1, len(items)):
        j = i
        while j > 0:
            if reverse:
                swap = items[j - 1] < items[j]
            else:
                swap = items[j] < items[j - 1]
            if not swap:
                break
            current = items[j]
            items[j] = items[j - 1]
            items[j - 1] = current
            j -= 1
