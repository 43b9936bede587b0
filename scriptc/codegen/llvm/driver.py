"""llvmlite's four steps: build (lower.py), a target machine for this CPU, the O3 pass pipeline, the JIT.

Compiled objects are cached in memory and on disk (SCRIPTC_CACHE_DIR, key = kernel hash + CPU +
features + llvmlite version), so a second process loads kernels without compiling. `STATS` counts
compiles and cache hits.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from scriptc import config

from ..kernel import KernelSpec
from .lower import lower

_MAGIC = b"SCRIPTC-KERNEL-1\n"
# Part of every cache key: bump it whenever lower.py or mathlib.py changes what a spec compiles to
# (the kernel ABI or its code), so kernels cached by an older scriptc are never reused.
CODEGEN_VERSION = 2
_lock = threading.Lock()
_state: dict = {}
KERNEL_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_int64))


@dataclass
class Stats:
    compiles: int = 0
    disk_hits: int = 0
    memory_hits: int = 0


STATS = Stats()


def _target_machine():
    if "tm" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        _state["cpu"] = llvm.get_host_cpu_name()
        _state["features"] = llvm.get_host_cpu_features().flatten()
        _state["tm"] = target.create_target_machine(cpu=_state["cpu"], features=_state["features"], opt=3)
        _state["memory"] = {}
        _state["engines"] = []
    return _state["tm"]


@dataclass
class CompiledKernel:
    spec: KernelSpec
    function: object   # the ctypes function
    address: int


def _optimize(module_ref, tm) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module_ref, pb)


def optimized_module(spec: KernelSpec):
    """The O3-optimized LLVM module of a spec (for tests that read the assembly)."""
    tm = _target_machine()
    module_ref = llvm.parse_assembly(str(lower(spec)))
    module_ref.verify()
    _optimize(module_ref, tm)
    return module_ref


def assembly(spec: KernelSpec) -> str:
    return _target_machine().emit_assembly(optimized_module(spec))


def cache_key(spec: KernelSpec) -> str:
    _target_machine()
    text = f"{spec.key}|{spec.flat}|{CODEGEN_VERSION}|{_state['cpu']}|{_state['features']}|{llvmlite.__version__}"
    return hashlib.sha256(text.encode()).hexdigest()


def _disk_path(key: str):
    return config.cache_dir() / "kernels" / f"{key}.o"


def _load_from_disk(key: str) -> bytes | None:
    if not config.cache_enabled():
        return None
    path = _disk_path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = _MAGIC + key.encode() + b"\n"
    if not data.startswith(header):
        return None  # stale or corrupt: rebuild
    return data[len(header):]


def _store_on_disk(key: str, obj: bytes) -> None:
    if not config.cache_enabled():
        return
    path = _disk_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(_MAGIC + key.encode() + b"\n" + obj)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache directory only costs recompiles


def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    """The machine-code kernel for a spec: from the memory cache, the disk cache, or compiled now."""
    key = cache_key(spec)
    with _lock:  # llvmlite serializes LLVM calls anyway; the lock also keeps the caches consistent
        memory = _state["memory"]
        if key in memory:
            STATS.memory_hits += 1
            return memory[key]
        tm = _state["tm"]
        obj = _load_from_disk(key)
        engine = None
        if obj is not None:
            try:
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
                engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
                engine.finalize_object()
                address = engine.get_function_address(spec.name)
                if not address:
                    raise RuntimeError("symbol missing")
                STATS.disk_hits += 1
            except Exception:
                engine = None
        if engine is None:
            module_ref = optimized_module(spec)
            obj = tm.emit_object(module_ref)
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            address = engine.get_function_address(spec.name)
            STATS.compiles += 1
            _store_on_disk(key, obj)
        _state["engines"].append(engine)  # the engine owns the code: keep it alive
        kernel = CompiledKernel(spec, KERNEL_TYPE(address), address)
        memory[key] = kernel
        return kernel
