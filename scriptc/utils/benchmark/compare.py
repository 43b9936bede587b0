"""Compare: many Timer measurements printed as tables (one per label; a row per sub-label, thread
count and environment; a column per description), laid out as torch.utils.benchmark prints them."""

from __future__ import annotations

import collections
import enum

import numpy as np

from scriptc.utils.benchmark.measurement import Measurement, select_unit

__all__ = ["Colorize", "Compare"]

_BEST, _GOOD, _BAD, _VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
_BOLD, _END = "\033[1m", "\033[0m"
_UNIT_NAMES = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value: float) -> int:
    # (in float32, as torch computes it, so a value at a power of ten rounds the same way)
    return int(np.ceil(np.log10(np.float32(value))))


def _trim_sigfig(value: float, figures: int) -> float:
    scale = 10 ** (_leading_digits(abs(value)) - figures)
    return float(np.round(np.float32(value / scale)) * scale)


class _Column:
    """One description's results; it picks one number format for all of them."""

    def __init__(self, groups: list[tuple], scale: float, trim: bool, highlight: bool) -> None:
        self.groups = groups
        results = [r for g in groups for r in g]
        self.trim = trim
        self.highlight = highlight and any(r.has_warnings for r in results if r)
        digits = [(_leading_digits(r.median / scale), r) for r in results if r]
        decimals = min(max(r.significant_figures - d, 0) for d, r in digits) if trim else 1
        width = max(d for d, _ in digits) + decimals + (1 if decimals else 0)
        self.template = f"{{:>{width}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def text(self, value: float | None, figures: int, spread: float | None) -> str:
        if value is None:
            return " " * len(self.text(1, figures, None))
        if self.trim:
            value = _trim_sigfig(value, figures)
        return self.template.format(value, f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else "")


class _Row:
    def __init__(self, results: list, group: int, show_env: bool, env_width: int, scale: float,
                 colorize: Colorize, num_threads: int | None) -> None:
        self.results, self.group, self.show_env, self.env_width = results, group, show_env, env_width
        self.scale, self.colorize, self.num_threads = scale, colorize, num_threads
        self.columns: tuple = ()

    def cells(self) -> list[str]:
        first = next(r for r in self.results if r is not None)
        env = (f"({first.env})" if self.show_env else "").ljust(self.env_width + 4)
        out = ["  " + env + first.as_row_name]
        for r, column in zip(self.results, self.columns):
            out.append(column.text(None, 1, None) if r is None else
                       column.text(r.median / self.scale, r.significant_figures,
                                   r.iqr / r.median if r.has_warnings else None))
        return out

    def separator(self, width: int) -> list[str]:
        return [f"{self.num_threads} threads: ".ljust(width, "-")] if self.num_threads is not None else []

    def finish(self, cells: list[str], widths: list[int]) -> list[str]:
        if self.colorize == Colorize.ROWWISE:
            best = [min(r.median for r in self.results if r is not None)] * len(cells)
        elif self.colorize == Colorize.COLUMNWISE:
            best = [min((r.median for r in c.groups[self.group] if r is not None), default=None) for c in self.columns]
        else:
            best = [None] * len(cells)
        out = [cells[0].ljust(widths[0])]
        for text, width, result, best_value in zip(cells[1:], widths[1:], self.results, best):
            text = text.center(width)
            if self.colorize != Colorize.NONE and result is not None and best_value is not None:
                text = _colored(text, result.median, best_value)
            out.append(text)
        return out


def _colored(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + text + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + text + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + text + _END * 2
    if value >= best * 2:
        return _BAD + text + _END * 2
    return text


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


def _table(results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool) -> str:
    unit, scale = select_unit(min(r.median for r in results))
    row_key = lambda m: (m.num_threads, m.env, m.as_row_name)  # noqa: E731
    row_keys = sorted(_unique([row_key(r) for r in results]), key=lambda k: k[:2])
    column_keys = _unique([r.description for r in results])
    grid = [[None] * len(column_keys) for _ in row_keys]
    for r in results:
        grid[row_keys.index(row_key(r))][column_keys.index(r.description)] = r
    envs = {r.env for r in results}
    show_envs = len(envs) > 1
    env_width = max(len(e) for e in envs) if show_envs else 0
    rows, groups, threads, last_env = [], [], None, ""
    for (num_threads, env, _), cells in zip(row_keys, grid):
        new_group = num_threads != threads
        if new_group:
            threads, last_env = num_threads, ""
            groups.append([])
        rows.append(_Row(cells, len(groups) - 1, show_envs and env != last_env, env_width, scale, colorize,
                         num_threads if new_group else None))
        groups[-1].append(cells)
        last_env = env
    columns = tuple(_Column([tuple(cells[i] for cells in g) for g in groups], scale, trim, highlight)
                    for i in range(len(column_keys)))
    for row in rows:
        row.columns = columns
    text_rows = [[""] + [str(k) if k is not None else "" for k in column_keys]] + [row.cells() for row in rows]
    count = max(len(t) for t in text_rows)
    for t in text_rows:
        t.extend([""] * (count - len(t)))
    widths = [max(len(cell) for cell in column) for column in zip(*text_rows)]
    lines = ["  |  ".join(cell.center(w) for cell, w in zip(text_rows[0], widths))]
    width = len(lines[0])
    for cells, row in zip(text_rows[1:], rows):
        lines.extend(row.separator(width))
        lines.append("  |  ".join(row.finish(cells, widths)))
    warned = highlight and any(r.has_warnings for r in results)
    note = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if warned else ""
    header = f"[{(' ' + (results[0].label or '') + ' ').center(width - 2, '-')}]"
    return f"{header}\n" + "\n".join(lines) + f"\n\nTimes are in {_UNIT_NAMES[unit]}s ({unit}).\n{note}"


class Compare:
    """Measurements printed as tables, one per label: rows are sub-labels (grouped by thread count,
    with the environment when several appear), columns are descriptions. `print(compare)` or
    `compare.print()` shows them; trim_significant_figures(), colorize() and highlight_warnings()
    change how."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim = False
        self._colorize = Colorize.NONE
        self._highlight = False

    def extend_results(self, results) -> None:
        """Add more measurements."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print each time with only the digits its spread makes significant."""
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color each time against the best in its column (or its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark times whose spread is large with (! XX%)."""
        self._highlight = True

    def __str__(self) -> str:
        by_label = collections.defaultdict(list)
        for r in Measurement.merge(self._results):
            by_label[r.label].append(r)
        return "\n".join(_table(group, self._colorize, self._trim, self._highlight) for group in by_label.values())

    def print(self) -> None:
        """Print the tables."""
        print(str(self))
