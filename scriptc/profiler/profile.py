"""torch.profiler.profile (activities, schedule, on_trace_ready, step) and the older
torch.autograd.profiler.profile; both record scriptc's eager op calls through one Recorder."""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from typing import Callable, Iterable

from scriptc.profiler import recorder as _recorder
from scriptc.profiler.events import EventList


class ProfilerActivity(enum.Enum):
    """The device activities a profile can record; this build records CPU."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks of one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    # Set by torch when a device's collection stops early; a schedule must not return it (CPU never stops).
    DEVICE_STOPPED = 4


def supported_activities() -> set:
    """The activities this build can profile: the CPU only."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A step -> ProfilerAction function: skip `skip_first` steps, then cycles of `wait` idle, `warmup` and
    `active` recorded steps (the last one saves the trace), `repeat` times (0: forever)."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, stacklevel=3)


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable:
    """An on_trace_ready handler writing each saved trace as `<worker>.<ns>.pt.trace.json[.gz]` in dir_name."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else ""))
        prof.export_chrome_trace(path)
    return handler


class _ProfileBase:
    """Shared by both profile classes: the Recorder of the current window and the finished events."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool, acc_events: bool = False):
        self.acc_events = acc_events
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self._recorder: _recorder.Recorder | None = None
        self._events: EventList | None = None

    def _start_recording(self) -> None:
        if _recorder.active[0] is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        if self._events is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events from the current cycle "
                       "will be reported. To keep events across cycles, set acc_events=True.")
        self._recorder = _recorder.Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        _recorder.start(self._recorder)

    def _stop_recording(self) -> None:
        if self._recorder is not None:
            _recorder.stop()
            events = self._recorder.close()
            if self.acc_events and self._events is not None:
                events[:0] = self._events
            self._events = events
            self._recorder = None

    def _finished(self) -> EventList:
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    def events(self) -> EventList:
        """Every recorded FunctionEvent of the last saved trace."""
        return self._finished()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events averaged by name (optionally also by input shapes or stack), ready for .table()."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """Write the trace as Chrome trace JSON (open it in chrome://tracing or Perfetto)."""
        self._finished().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write `frame;frame;... value` lines (flamegraph input) for events recorded with_stack=True."""
        with open(path, "w") as f:
            for event in self._finished():
                if event.stack:
                    f.write(";".join(reversed(event.stack)) + f" {int(getattr(event, metric))}\n")


class profile(_ProfileBase):
    """torch.profiler.profile: records every eager op call (as `aten::<op>`) and record_function range while
    active; with a `schedule`, only the steps it marks RECORD, calling `on_trace_ready(prof)` after each
    RECORD_AND_SAVE step. Use as a context manager, or call start()/step()/stop()."""

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback: Callable | None = None,
                 post_processing_timeout_s: float | None = None):
        super().__init__(record_shapes, profile_memory, with_stack, acc_events)
        requested = set(activities) if activities else supported_activities()
        if ProfilerActivity.CUDA in requested or use_cuda:
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
        self.activities = requested & supported_activities()
        self.schedule = schedule or _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        if self.current_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self._step_range = None
        self._metadata: dict[str, str] = {}

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Begin profiling at step 0 (what entering the `with` block does)."""
        if not self.activities:
            raise AssertionError("No activities specified for the profiler")
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self) -> None:
        """End profiling; a trace being recorded is saved (and handed to on_trace_ready)."""
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the end of one training step: the schedule decides what the next step records."""
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._open_step()

    def add_metadata(self, key: str, value: str) -> None:
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        self._metadata[key] = value

    def _open_step(self) -> None:
        if self.record_steps and self._recorder is not None:
            self._step_range = _recorder.record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _transit(self, previous: ProfilerAction, current: ProfilerAction | None) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous in recording and (previous == ProfilerAction.RECORD_AND_SAVE or current not in recording):
            self._stop_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if current in recording and self._recorder is None:
            self._start_recording()


class autograd_profile(_ProfileBase):
    """torch.autograd.profiler.profile: records while its `with` block runs (when `enabled`)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False, custom_trace_id_callback=None,
                 post_processing_timeout_s: float | None = None, activity_filters=None):
        super().__init__(record_shapes, profile_memory, with_stack)
        self.enabled = enabled

    def __enter__(self) -> "autograd_profile":
        if self.enabled:
            if self._events is not None:
                raise RuntimeError("Profiler context manager is not reentrant")
            self._start_recording()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._stop_recording()

    @property
    def function_events(self) -> EventList:
        return self._finished()

    @property
    def self_cpu_time_total(self) -> float:
        """The summed self CPU time of every event, in microseconds."""
        return self._finished().self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100, **options) -> str:
        return self._finished().table(sort_by=sort_by, row_limit=row_limit, **options)

    def total_average(self):
        return self._finished().total_average()

    def __str__(self) -> str:
        return str(self._finished())
