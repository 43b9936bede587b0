"""torch.profiler: time scriptc's eager op calls and labelled code ranges.

    with torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with torch.profiler.record_function("forward"):
            model(x)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

Each op call is one event named `aten::<op>` (the op table's name); record_function ranges nest them.
The hook into eager dispatch (`scriptc.tensors.dispatch.profiler_hook`) is a single check while no
profiler runs."""

from scriptc.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from scriptc.profiler.profile import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)
from scriptc.profiler.recorder import record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "profile",
           "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]
