"""Measurement: the times one Timer run took, summarised as torch.utils.benchmark does (quartiles by
linear interpolation, IQR warnings, the repr with its unit chosen from the median)."""

from __future__ import annotations

import collections
import dataclasses
import math
import textwrap
from typing import Any, Iterable

import numpy as np

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels a Measurement prints."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the one-line statement), with the sub-label after a colon."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        return f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASK_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float) -> tuple[str, float]:
    """The unit ("ns", "us", "ms", "s") and its scale in seconds that print `t` seconds near 1-999."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


@dataclasses.dataclass(repr=False)
class Measurement:
    """Times of `number_per_run` executions each (raw_times, seconds); `times` are per execution."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in _TASK_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q)) if self.raw_times else -1.0

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return float(np.mean(self.times)) if self.raw_times else -1.0

    @property
    def iqr(self) -> float:
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def significant_figures(self) -> int:
        """Digits the interquartile spread supports (1 to 4), as torch's Compare trims to."""
        ordered = sorted(self.times)
        middle = ordered[len(ordered) // 4:math.ceil(3 * len(ordered) / 4)]
        spread = max(1.645 * float(np.std(middle)) / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(int(math.floor(math.log10(self.median / spread))), 1), _MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether the IQR is under `threshold` of the median."""
        return self.iqr / self.median < threshold

    @property
    def _warnings(self) -> tuple[str, ...]:
        if not self.raw_times:
            return ()
        for threshold, reason in ((_IQR_GROSS_WARN_THRESHOLD, "This suggests significant environmental influence."),
                                  (_IQR_WARN_THRESHOLD, "This could indicate system fluctuation.")):
            if not self.meets_confidence(threshold):
                return (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% of the median "
                        f"measurement.\n           {reason}",)
        return ()

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        n = len(self.raw_times)
        median, p25, p75 = self.median, self._quantile(0.25), self._quantile(0.75)
        unit, scale = select_unit(median)
        threads = self.task_spec.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines += self._warnings
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list["Measurement"]:
        """One Measurement per TaskSpec, its times scaled to one execution per run."""
        groups: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]
