"""What a profiler run produced: one FunctionEvent per op call or record_function range, EventList to
average them by name (key_averages), print torch's table and write a Chrome trace."""

from __future__ import annotations

import json
import os

_COLUMN_WIDTH = 12
_MAX_NAME_WIDTH = 55
_MAX_SHAPES_WIDTH = 80
_MAX_SOURCE_WIDTH = 75


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class FunctionEvent:
    """One op call (`aten::add`) or record_function range, with its CPU interval in microseconds."""

    def __init__(self, id: int, name: str, start_us: float, thread: int, input_shapes: list,
                 stack: list[str], is_user_annotation: bool):
        self.id = id
        self.name = name
        # torch averages the steps of a schedule as one row
        self.key = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.start_us = start_us
        self.end_us = start_us
        self.thread = thread
        self.input_shapes = input_shapes
        self.stack = stack
        self.is_user_annotation = is_user_annotation
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.self_cpu_memory_usage = 0
        self.count = 1
        self.device_type = "CPU"

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + sum(child.cpu_memory_usage for child in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[child.id for child in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg:
    """The events that share a key (name, and input shapes or stack when grouped by them), summed."""

    def __init__(self, key: str, input_shapes, stack: list[str], is_user_annotation: bool):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack
        self.is_user_annotation = is_user_annotation
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_type = "CPU"

    def add(self, event) -> "FunctionEventAvg":
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvents (or of their averages) that prints as torch's profiler table."""

    def __init__(self, events=(), profile_memory: bool = False, base_time_ns: int = 0):
        super().__init__(events)
        self._profile_memory = profile_memory
        self._base_time_ns = base_time_ns

    @property
    def self_cpu_time_total(self) -> float:
        """The summed self CPU time of every event, in microseconds."""
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """The events averaged per name (and per input shapes / innermost `group_by_stack_n` stack frames)."""
        groups: dict = {}
        for event in self:
            stack = event.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            key = (event.key, str(event.input_shapes) if group_by_input_shape else "", tuple(stack))
            if key not in groups:
                # torch blanks the shapes of averages it did not group by them
                groups[key] = FunctionEventAvg(event.key, event.input_shapes if group_by_input_shape else "",
                                               stack, event.is_user_annotation)
            groups[key].add(event)
        averages = EventList(groups.values(), self._profile_memory, self._base_time_ns)
        averages._grouped_by_shape = group_by_input_shape
        return averages

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total", None, [], False)
        for event in self:
            total.add(event)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = _MAX_SOURCE_WIDTH,
              max_name_column_width: int = _MAX_NAME_WIDTH, max_shapes_column_width: int = _MAX_SHAPES_WIDTH,
              header: str | None = None, top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's profiler table: one row per event, sorted by `sort_by` (an attribute such as
        "cpu_time_total", "self_cpu_time_total", "count", "cpu_memory_usage"), at most `row_limit` rows."""
        return _build_table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, header, top_level_events_only,
                            getattr(self, "_grouped_by_shape", False))

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto): complete ('X') events in us."""
        pid = os.getpid()
        base_us = self._base_time_ns / 1000.0
        trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}]
        for event in self:
            trace.append({"ph": "X", "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                          "name": event.name, "pid": pid, "tid": event.thread, "ts": base_us + event.start_us,
                          "dur": event.cpu_time_total,
                          "args": {"External id": event.id, "Input Dims": event.input_shapes}})
        with open(path, "w") as f:
            json.dump({"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": self._base_time_ns,
                       "traceEvents": trace}, f)


def _build_table(events, sort_by, row_limit, max_src_width, max_name_width, max_shapes_width, header,
                 top_level_only, show_shapes) -> str:
    if len(events) == 0:
        return ""
    total_self = sum(event.self_cpu_time_total for event in events)
    memory = getattr(events, "_profile_memory", False)
    if top_level_only:
        events = [event for event in events if getattr(event, "cpu_parent", None) is None]
    if sort_by is not None:
        events = sorted(events, key=lambda event: getattr(event, sort_by), reverse=True)
    name_width = min(max(len(event.key) for event in events) + 4, max_name_width)
    columns = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    widths = [name_width] + [_COLUMN_WIDTH] * 5
    if memory:
        columns += ["CPU Mem", "Self CPU Mem"]
        widths += [_COLUMN_WIDTH] * 2
    columns.append("# of Calls")
    widths.append(_COLUMN_WIDTH)
    if show_shapes:
        columns.append("Input Shapes")
        widths.append(min(max(len(str(event.input_shapes)) for event in events) + 4, max_shapes_width))
    has_stack = any(event.stack for event in events)
    if has_stack:
        columns.append("Source Location")
        widths.append(min(max(len(entry) for event in events for entry in event.stack) + 4, max_src_width))
    separator = "".join("-" * width + "  " for width in widths)
    lines = [] if header is None else ["=" * len(separator), header]
    lines += [separator, "".join(f"{column: >{width}}  " for column, width in zip(columns, widths)), separator]
    for event in events[:row_limit] if row_limit > 0 else events:
        name = event.key if len(event.key) < name_width - 3 else event.key[:name_width - 3] + "..."
        cells = [name, _format_share(event.self_cpu_time_total, total_self), _format_time(event.self_cpu_time_total),
                 _format_share(event.cpu_time_total, total_self), _format_time(event.cpu_time_total),
                 _format_time(event.cpu_time)]
        if memory:
            cells += [_format_memory(event.cpu_memory_usage), _format_memory(event.self_cpu_memory_usage)]
        cells.append(str(event.count))
        if show_shapes:
            cells.append(str(event.input_shapes)[:widths[len(cells)]])
        if has_stack:
            cells.append(event.stack[0][:widths[len(cells)]] if event.stack else "")
        lines.append("".join(f"{cell: >{width}}  " for cell, width in zip(cells, widths)))
        for entry in event.stack[1:] if has_stack else ():
            lines.append("".join(" " * width + "  " for width in widths[:-1]) + f"{entry[:widths[-1]]: >{widths[-1]}}  ")
    lines += [separator, f"Self CPU time total: {_format_time(total_self)}"]
    return "\n".join(lines) + "\n"
