"""torch.utils.benchmark.Timer and Measurement against torch 2.13: statistics, repr, errors."""

import re

import pytest

import scriptc
from scriptc.utils.benchmark import Measurement, TaskSpec, Timer

torch = pytest.importorskip("torch")
torch_benchmark = pytest.importorskip("torch.utils.benchmark")

TIMES = [3e-6, 1e-6, 2e-6, 4e-6, 2.5e-6, 9e-6]


def _pair(times, number=10, **spec):
    ours = Measurement(number, list(times), TaskSpec(**spec))
    theirs = torch_benchmark.Measurement(number, list(times), torch_benchmark.utils.common.TaskSpec(
        **spec))
    return ours, theirs


def _without_address(text):
    return re.sub(r"object at 0x[0-9a-f]+", "object", text).replace(
        "torch.utils.benchmark.utils.common.", "").replace("scriptc.utils.benchmark.measurement.", "")


@pytest.mark.parametrize("times, spec", [
    (TIMES, dict(stmt="x + 1", setup="x = torch.ones(3)")),
    (TIMES[:2], dict(stmt="a\nb", setup="pass", sub_label="small", description="two lines")),
    (TIMES[:1], dict(stmt="y", setup="import os\nimport re", label="Label", num_threads=2)),
    ([1e-3, 1.01e-3, 0.99e-3, 1.02e-3, 1e-3], dict(stmt="z", setup="pass")),
])
def test_measurement_statistics_and_repr_match_torch(times, spec):
    ours, theirs = _pair(times, **spec)
    for name in ("median", "mean", "iqr", "has_warnings", "title", "env", "times", "as_row_name"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name)), name
    if len(times) > 2:
        assert ours.significant_figures == theirs.significant_figures
    assert _without_address(repr(ours)) == _without_address(repr(theirs))
    assert ours.stmt == spec["stmt"] and ours.meets_confidence(0.5) == theirs.meets_confidence(0.5)


def test_merge_scales_to_one_run():
    a, _ = _pair(TIMES[:2], number=10, stmt="s", setup="pass")
    b, _ = _pair(TIMES[2:4], number=5, stmt="s", setup="pass")
    (merged,) = Measurement.merge([a, b])
    assert merged.number_per_run == 1 and merged.raw_times == pytest.approx(a.times + b.times)


def test_timer_measures_the_statement_with_scriptc_as_torch():
    calls = []
    timer = Timer("work(x)", setup="x = torch.ones(4)", globals={"work": lambda x: calls.append(x.sum().item())},
                  label="sum", num_threads=1)
    measurement = timer.timeit(50)
    assert measurement.number_per_run == 50 and len(measurement.raw_times) == 1 and measurement.median > 0
    assert len(calls) == 50 + 2 and calls[0] == 4.0
    blocked = timer.blocked_autorange(min_run_time=0.01)
    assert sum(blocked.raw_times) >= 0.01 and blocked.number_per_run >= 1
    reported = []
    adaptive = timer.adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=0.5,
                                        callback=lambda number, spent: reported.append(number))
    assert len(adaptive.raw_times) == len(reported) >= 1
    assert scriptc.get_num_threads() >= 1


def test_timer_errors_match_torch():
    for lib in (scriptc, torch):
        assert lib.utils.benchmark.Timer is (Timer if lib is scriptc else torch_benchmark.Timer)
        with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
            lib.utils.benchmark.Timer(lambda: None)
        with pytest.raises(ValueError, match="Invalid language `fortran`."):
            lib.utils.benchmark.Timer("pass", language="fortran")
        with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
            lib.utils.benchmark.Timer("pass", global_setup="int x;")
        with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
            lib.utils.benchmark.Timer("pass").autorange()
