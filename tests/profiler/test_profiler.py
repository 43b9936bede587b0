"""torch.profiler against torch 2.13: the table's layout and counts, schedules, step traces, Chrome
traces, record_function ranges and the errors."""

import json
import warnings

import pytest

import scriptc
from scriptc.profiler import ProfilerAction, profile, record_function, schedule
from scriptc.profiler.profile import autograd_profile
from scriptc.tensors import dispatch

torch = pytest.importorskip("torch")


def _workload(lib):
    x = lib.ones(8, 8)
    for _ in range(3):
        y = (x.matmul(x)).relu() + 1
        y.mul_(2)
    return y


def _table_lines(table):
    return table.splitlines()


@pytest.mark.parametrize("options", [dict(), dict(profile_memory=True)])
@pytest.mark.parametrize("by_shape", [False, True])
def test_table_header_and_counts_match_torch(options, by_shape):
    tables = []
    counts = []
    for lib in (scriptc, torch):
        with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], record_shapes=True,
                                  **options) as prof:
            with lib.profiler.record_function("block"):
                _workload(lib)
        averages = prof.key_averages(group_by_input_shape=by_shape)
        tables.append(averages.table(sort_by="cpu_time_total", row_limit=100))
        counts.append({(e.key, str(e.input_shapes) if by_shape else None): e.count for e in averages
                       if e.key in ("block", "aten::matmul", "aten::relu", "aten::add", "aten::mul_")})
    ours, theirs = (_table_lines(t) for t in tables)
    assert ours[1].split() == theirs[1].split()  # the column names
    assert ours[-1].startswith("Self CPU time total: ") and theirs[-1].startswith("Self CPU time total: ")
    assert counts[0] == counts[1]


def test_rows_sorted_and_limited_and_times_nest():
    with profile(record_shapes=True) as prof:
        with record_function("outer"):
            _workload(scriptc)
    averages = prof.key_averages()
    lines = _table_lines(averages.table(sort_by="count", row_limit=2))
    rows = lines[3:-2]
    assert len(rows) == 2 and rows[0].split()[0] in ("aten::matmul", "aten::relu", "aten::add", "aten::mul_")
    outer = next(e for e in prof.events() if e.name == "outer")
    assert len(outer.cpu_children) == 13  # ones, then matmul, relu, add, mul_ three times
    assert outer.cpu_time_total >= sum(child.cpu_time_total for child in outer.cpu_children)
    assert prof.events().self_cpu_time_total == pytest.approx(outer.cpu_time_total)
    assert averages.total_average().count == 14


def test_profile_memory_counts_output_bytes():
    with profile(profile_memory=True) as prof:
        scriptc.ones(256, dtype=scriptc.float64) * 2
    mul = next(e for e in prof.key_averages() if e.key == "aten::mul")
    assert mul.self_cpu_memory_usage == 256 * 8
    assert "2.00 KB" in prof.key_averages().table()


@pytest.mark.parametrize("arguments", [
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=2),
    dict(wait=0, warmup=2, active=1, repeat=1, skip_first=3),
    dict(skip_first=2, wait=1, warmup=1, active=2, repeat=2, skip_first_wait=1),
])
def test_schedule_matches_torch(arguments):
    ours, theirs = schedule(**arguments), torch.profiler.schedule(**arguments)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_errors_and_warning_match_torch():
    for lib in (scriptc, torch):
        with pytest.raises(AssertionError, match=r"Invalid profiler schedule arguments. Got wait=-1 \(need >= 0\)"):
            lib.profiler.schedule(wait=-1, warmup=0, active=1)
        with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
            lib.profiler.schedule(wait=1, warmup=0, active=1)


def test_scheduled_steps_hand_traces_like_torch():
    results = []
    for lib in (scriptc, torch):
        ready = []
        with lib.profiler.profile(schedule=lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                                  on_trace_ready=lambda p: ready.append(
                                      (p.step_num, {e.key: e.count for e in p.key_averages()
                                                    if e.key in ("ProfilerStep*", "aten::add")}))) as prof:
            for i in range(10):
                lib.ones(2) + i
                prof.step()
        results.append(ready)
    assert results[0] == results[1]


def test_stop_saves_a_trace_being_recorded():
    ready = []
    with profile(on_trace_ready=ready.append):
        scriptc.ones(2) + 1
    assert len(ready) == 1 and [e.key for e in ready[0].key_averages()] == ["aten::ones", "aten::add"]


def test_chrome_trace_is_valid(tmp_path):
    with profile() as prof:
        with record_function("region"):
            scriptc.ones(3) * 2
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in complete] == ["region", "aten::ones", "aten::mul"]
    assert complete[0]["cat"] == "user_annotation" and complete[1]["cat"] == "cpu_op"
    region, ones, mul = complete
    assert region["ts"] <= ones["ts"] and mul["ts"] + mul["dur"] <= region["ts"] + region["dur"] + 1e-3


def test_tensorboard_trace_handler_writes_a_trace(tmp_path):
    with profile(on_trace_ready=scriptc.profiler.tensorboard_trace_handler(str(tmp_path), "worker0")):
        scriptc.ones(2) + 1
    (written,) = tmp_path.iterdir()
    assert written.name.startswith("worker0.") and written.name.endswith(".pt.trace.json")
    assert json.loads(written.read_text())["traceEvents"]


def test_record_function_decorator_and_without_profiler():
    @record_function("labelled")
    def double(x):
        return x * 2

    assert double(scriptc.ones(2)).tolist() == [2.0, 2.0]
    with profile(with_stack=True) as prof:
        double(scriptc.ones(2))
    labelled = next(e for e in prof.events() if e.name == "labelled")
    assert [c.name for c in labelled.cpu_children] == ["aten::mul"]
    assert any("test_profiler.py" in entry for entry in labelled.cpu_children[0].stack)
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_hook_is_removed_even_when_the_block_raises():
    with pytest.raises(ValueError):
        with profile():
            raise ValueError("boom")
    assert dispatch.profiler_hook[0] is None


def test_cuda_only_activities_warn_and_fail_like_torch():
    for lib in (scriptc, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(AssertionError, match="No activities specified for the profiler"):
                with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CUDA]):
                    pass
        assert any("CUDA is not available, disabling CUDA profiling" in str(w.message) for w in caught)
    assert dispatch.profiler_hook[0] is None


def test_results_before_finishing_raise():
    prof = profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.key_averages()


def test_autograd_profiler_profile():
    with autograd_profile(record_shapes=True) as prof:
        scriptc.ones(3) * 2
    assert [e.key for e in prof.function_events] == ["aten::ones", "aten::mul"]
    assert prof.self_cpu_time_total > 0 and "aten::mul" in prof.table()
    with autograd_profile(enabled=False) as off:
        scriptc.ones(3)
    with pytest.raises(RuntimeError):
        off.key_averages()


def test_profiler_action_names():
    assert [a.name for a in ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction]


def test_acc_events_keeps_every_cycle():
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=3), acc_events=True) as prof:
        for i in range(6):
            scriptc.ones(2) + i
            prof.step()
    assert next(e for e in prof.key_averages() if e.key == "aten::add").count == 3


def test_a_schedule_returning_device_stopped_is_refused():
    with pytest.raises(ValueError, match="DEVICE_STOPPED is set internally"):
        profile(schedule=lambda step: ProfilerAction.DEVICE_STOPPED)


def test_torch_autograd_profiler_names():
    assert scriptc.autograd.profiler.profile is autograd_profile
    assert scriptc.autograd.profiler.record_function is record_function
    with scriptc.autograd.profiler.profile() as prof:
        with scriptc.autograd.profiler.record_function("step"):
            scriptc.ones(2) + 1
    assert [e.key for e in prof.key_averages()] == ["step", "aten::ones", "aten::add"]
    with pytest.raises(AttributeError, match="has no attribute 'emit_nvtx'"):
        _ = scriptc.autograd.profiler.emit_nvtx


@pytest.mark.parametrize("record_shapes", [False, True])
def test_averages_not_grouped_by_shape_have_empty_input_shapes(record_shapes):
    """torch blanks input_shapes ("") on averages that were not grouped by them."""
    shapes = []
    for lib in (scriptc, torch):
        with lib.profiler.profile(record_shapes=record_shapes) as prof:
            _workload(lib)
        shapes.append({e.key: e.input_shapes for e in prof.key_averages() if e.key == "aten::relu"})
    assert shapes[0] == shapes[1] == {"aten::relu": ""}
