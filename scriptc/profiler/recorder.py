"""Recording: while a profiler is active, eager dispatch hands every op call to `Recorder.__call__`
(`scriptc.tensors.dispatch.profiler_hook`), which times it as one FunctionEvent `aten::<op>` nested in the
innermost open record_function range; ops an op runs internally are not recorded separately."""

from __future__ import annotations

import os
import threading
import time
import traceback

from scriptc.profiler.events import EventList, FunctionEvent
from scriptc.tensors import Tensor
from scriptc.tensors import dispatch as _dispatch

# Frames inside scriptc are left out of with_stack entries: the user's code is what they locate.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _shape(value):
    if isinstance(value, Tensor):
        return list(value.shape)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Tensor) for v in value):
        return [list(v.shape) for v in value]
    return []


def _output_bytes(result) -> int:
    if isinstance(result, Tensor):
        return result._data.nbytes
    if isinstance(result, (tuple, list)):
        return sum(_output_bytes(item) for item in result)
    return 0


def _python_stack() -> list[str]:
    """The caller's Python frames, innermost first, outside scriptc itself (torch's with_stack entries)."""
    frames = [frame for frame in traceback.extract_stack() if not frame.filename.startswith(_PACKAGE_DIR)]
    return [f"{frame.filename}({frame.lineno}): {frame.name}" for frame in reversed(frames)]


class Recorder:
    """The events of one profiling window, and the record_function ranges open in it."""

    def __init__(self, record_shapes: bool, profile_memory: bool, with_stack: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.base_ns = time.perf_counter_ns()
        self.wall_base_ns = time.time_ns()
        self.events: list[FunctionEvent] = []
        self._open: list[FunctionEvent] = []

    def _now_us(self) -> float:
        return (time.perf_counter_ns() - self.base_ns) / 1000.0

    def begin(self, name: str, input_shapes: list, user_annotation: bool) -> FunctionEvent:
        event = FunctionEvent(len(self.events) + 1, name, self._now_us(), threading.get_ident(),
                              input_shapes if self.record_shapes else [],
                              _python_stack() if self.with_stack else [], user_annotation)
        if self._open:
            event.cpu_parent = self._open[-1]
            self._open[-1].cpu_children.append(event)
        self.events.append(event)
        self._open.append(event)
        return event

    def end(self, event: FunctionEvent) -> None:
        event.end_us = self._now_us()
        if event in self._open:
            self._open.remove(event)

    def __call__(self, op, run, args):
        """Time one op call (the dispatch hook); nested dispatch inside it is not recorded."""
        event = self.begin("aten::" + op.base_name, [_shape(a) for a in args] if self.record_shapes else [], False)
        _dispatch.profiler_hook[0] = None
        try:
            result = run(op, args)
        finally:
            _dispatch.profiler_hook[0] = self
            self.end(event)
        if self.profile_memory:
            event.self_cpu_memory_usage = _output_bytes(result)
        return result

    def close(self) -> EventList:
        """The recorded events (ranges still open end now)."""
        for event in list(self._open):
            self.end(event)
        return EventList(self.events, self.profile_memory, self.wall_base_ns)


# The Recorder of the running profile (also reached by record_function ranges), or None.
active: list = [None]


def start(recorder: Recorder) -> None:
    active[0] = recorder
    _dispatch.profiler_hook[0] = recorder


def stop() -> None:
    active[0] = None
    _dispatch.profiler_hook[0] = None


class record_function:
    """Label a block of code in the profile: `with record_function("name"):` or `@record_function("name")`.
    Its event spans the block and its ops nest under it; it costs one check when no profiler runs."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._event = None
        self._recorder = None

    def __enter__(self) -> "record_function":
        recorder = active[0]
        if recorder is not None:
            self._recorder = recorder
            self._event = recorder.begin(self.name, [], True)
        return self

    def __exit__(self, *exc) -> None:
        if self._event is not None:
            self._recorder.end(self._event)
            self._event = self._recorder = None

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapped
