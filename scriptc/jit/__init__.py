"""scriptc.jit: tracing and scripting into the IR, and the ScriptModule they produce."""

from typing import Final  # noqa: F401  (torch.jit.Final: a module attribute that is a constant)

from scriptc.errors import JitError as Error, TracerWarning  # noqa: F401
from scriptc.jit.module import RecursiveScriptModule, ScriptFunction, ScriptModule, TracedModule  # noqa: F401
from scriptc.jit.trace import trace  # noqa: F401
from scriptc.jit.trace_check import TracingCheckError  # noqa: F401
from scriptc.jit.compilation_unit import CompilationUnit  # noqa: F401,E402
from scriptc.jit.script_module_class import script_method  # noqa: F401,E402
from scriptc.jit.api import freeze, load, optimize_for_inference, save, script, script_if_tracing  # noqa: F401,E402
from scriptc.jit.trace_module import trace_module  # noqa: F401,E402
from scriptc.jit import _recursive  # noqa: F401,E402  (torch.jit._recursive)
from scriptc.jit.fusion_settings import (  # noqa: F401,E402
    enable_onednn_fusion,
    onednn_fusion_enabled,
    optimized_execution,
    set_fusion_strategy,
    strict_fusion,
)
from scriptc.jit.markers import (  # noqa: F401,E402
    Attribute,
    Future,
    _IgnoreContextManager,
    _awaitable,
    _awaitable_nowait,
    _awaitable_wait,
    _drop,
    _overload,
    _overload_method,
    _unwrap_optional,
    annotate,
    export,
    fork,
    ignore,
    interface,
    is_scripting,
    is_tracing,
    isinstance,
    unused,
    wait,
)

_script_if_tracing = script_if_tracing  # torchvision's name for it
_fork = fork  # torch.jit._fork / _wait: the names torch's own code uses
_wait = wait
from scriptc._awaits import _Await  # noqa: E402,F401  (torch.jit._Await)
