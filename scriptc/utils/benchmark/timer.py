"""Timer: torch.utils.benchmark.Timer for Python statements, on timeit, with scriptc's thread count set
to `num_threads` while it measures."""

from __future__ import annotations

import contextlib
import enum
import statistics
import textwrap
import timeit
from typing import Any, Callable

from scriptc.utils.benchmark.measurement import Measurement, TaskSpec


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _trimmed(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    """Time `stmt` (a string, run after `setup`, with `globals`; `torch` names scriptc there):
    timeit(number), blocked_autorange(min_run_time), adaptive_autorange(threshold) return Measurements."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timeit.default_timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None, description: str | None = None,
                 env: str | None = None, num_threads: int = 1, language: Language | str = Language.PYTHON):
        import scriptc

        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise ValueError("scriptc's Timer times Python statements only; C++ statements need PyTorch's "
                             "C++ toolchain.")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be "
                             "moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", scriptc)
        stmt, setup = _trimmed(stmt), _trimmed(setup)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    @contextlib.contextmanager
    def _threads(self):
        """scriptc's thread count set to num_threads while measuring, restored after."""
        import scriptc

        prior = scriptc.get_num_threads()
        scriptc.set_num_threads(self._task_spec.num_threads)
        try:
            yield
        finally:
            scriptc.set_num_threads(prior)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run the statement `number` times (after a warm-up of number // 100) as one measurement."""
        with self._threads():
            self._timeit(max(number // 100, 2))
            return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        """Executions per block: enough that timer overhead is under 0.01% (or a block takes min_run_time)."""
        with self._threads():
            overhead = statistics.median(self._timeit(0) for _ in range(5))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def _measure(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
                 max_run_time: float | None, callback: Callable | None) -> Measurement:
        total, times, can_stop = 0.0, [], False
        with self._threads():
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return Measurement(number, times, self._task_spec)

    def blocked_autorange(self, callback: Callable | None = None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of many executions until `min_run_time` seconds are spent; each block is one time."""
        number = self._block_size(min_run_time)
        return self._measure(number, lambda times: True, min_run_time, None, callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable | None = None) -> Measurement:
        """Blocks until the IQR is under `threshold` of the median (at least 4 blocks, at most max_run_time)."""
        number = self._block_size(0.05)

        def confident(times: list[float]) -> bool:
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)
        return self._measure(number, confident, min_run_time, max_run_time, callback)
