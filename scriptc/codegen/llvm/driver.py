"""llvmlite's four steps: build (lower.py), a target machine for this CPU, the O3 pass pipeline, the JIT.

Compiled objects are cached in memory and on disk (SCRIPTC_CACHE_DIR, key = kernel hash + the
fingerprint of the code that made it + CPU + features + llvmlite version), so a second process
loads kernels without compiling. `STATS` counts compiles and cache hits. The hand-written native
modules (scriptc/native) go through the same steps (compile_module), under their own fingerprints.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from scriptc import config

from ..kernel import KernelSpec

_MAGIC = b"SCRIPTC-KERNEL-1\n"


def source_fingerprint(paths) -> str:
    """A hash of the source files at `paths`."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


_HERE = Path(__file__).resolve().parent
# What makes machine code of a spec (the spec builder, this backend's lowering, math library and this
# driver): part of every kernel's cache key, so a kernel cached by another version is never reused.
CODEGEN_FINGERPRINT = source_fingerprint((_HERE.parent / "kernel.py", _HERE / "lower.py", _HERE / "loop.py",
                                          _HERE / "mathlib.py", _HERE / "driver.py"))
DRIVER_FINGERPRINT = source_fingerprint((_HERE / "driver.py",))
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


def _target_machine(code_model: str = "small"):
    """The target machine for this CPU, for one of two code models.

    The small code model addresses constants PC-relative instead of through a 64-bit immediate per
    use (a movabs in every loop iteration, 30% of a compute-bound kernel). It needs code and data
    within 2 GB of each other, which llvmlite's own memory manager guarantees by reserving one block
    per object (use_lmm); that manager cannot place the stubs that calls into libm need, so a kernel
    that calls out is built with the large ("jitdefault") model and LLVM's section memory manager.
    """
    if "machines" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        _state["cpu"] = llvm.get_host_cpu_name()
        _state["features"] = llvm.get_host_cpu_features().flatten()
        _state["machines"] = {model: target.create_target_machine(cpu=_state["cpu"], features=_state["features"],
                                                                  opt=3, codemodel=model)
                              for model in ("small", "jitdefault")}
        _state["memory"] = {}
        _state["engines"] = []
    return _state["machines"][code_model]


# Intrinsics every x86-64 CPU (with SSE4.1, FMA) executes as instructions, the lowering's and those
# the optimizer adds (vector reductions, prefetches, min/max idioms); any other declaration in an
# optimized kernel module (llvm.sin, llvm.pow, llvm.memset, ...) becomes a call into libm or libc.
_INLINE_INTRINSICS = ("llvm.fabs.", "llvm.sqrt.", "llvm.maximum.", "llvm.minimum.", "llvm.maxnum.", "llvm.minnum.",
                      "llvm.vector.reduce.", "llvm.prefetch", "llvm.fmuladd.", "llvm.smax.", "llvm.smin.",
                      "llvm.umax.", "llvm.umin.", "llvm.abs.", "llvm.masked.load.", "llvm.masked.store.",
                      "llvm.masked.gather.")
_SSE41_INTRINSICS = ("llvm.floor.", "llvm.ceil.", "llvm.rint.")
_FMA_INTRINSICS = ("llvm.fma.",)


def _code_model(module) -> str:
    inline = _INLINE_INTRINSICS + (_SSE41_INTRINSICS if "+sse4.1" in _state["features"] else ()) + (
        _FMA_INTRINSICS if "+fma" in _state["features"] else ())
    calls_out = any(f.is_declaration and not f.name.startswith(inline) for f in module.functions)
    return "jitdefault" if calls_out else "small"


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


def _function_attributes() -> str:
    # LLVM defaults to 256-bit vectors on AVX-512 CPUs (older parts downclock on 512-bit ops); our
    # kernels are compute-bound loops with FMAs, and 512-bit halves their instruction count.
    # Reciprocal estimates (rcp14 + one Newton step) replace only the divisions marked arcp+ninf: the
    # math library's own, inside its error bounds (tanh's stays 5.5 ulp); a user's div stays exact.
    _target_machine()
    width = '"prefer-vector-width"="512" ' if "+avx512f" in _state["features"] else ""
    return width + '"reciprocal-estimates"="vec-divf:1,divf:1"'


def _with_attributes(text: str, name: str) -> str:
    """The IR text with the function attributes llvmlite.ir cannot spell."""
    attributes = _function_attributes()
    if not attributes:
        return text
    head, define, body = text.partition(f'define void @"{name}"')
    signature_end = body.index("\n{")
    return head + define + body[:signature_end] + " " + attributes + body[signature_end:]


def optimized_module(spec: KernelSpec):
    """The O3-optimized LLVM module of a spec and the code model to emit it with."""
    from .lower import lower  # imported on a cache miss only: loading from the disk cache never lowers

    module = lower(spec)
    module_ref = llvm.parse_assembly(_with_attributes(str(module), spec.name))
    module_ref.verify()
    _optimize(module_ref, _target_machine("small"))
    # Decided on the optimized module: the optimizer turns a zero-filling loop into a memset call,
    # which the small model's memory manager cannot place (it aborts the process).
    return module_ref, _code_model(module_ref)


def assembly(spec: KernelSpec) -> str:
    """The kernel's machine code as assembly text (tests read it for vector instructions)."""
    module_ref, code_model = optimized_module(spec)
    return _target_machine(code_model).emit_assembly(module_ref)


def _state_key() -> str:
    """What else decides the machine code: the host CPU, its features, the llvmlite (LLVM) version."""
    _target_machine()
    return f"{_state['cpu']}|{_state['features']}|{llvmlite.__version__}"


def cache_key(spec: KernelSpec) -> str:
    return hashlib.sha256(f"{spec.key}|{spec.flat}|{CODEGEN_FINGERPRINT}|{_state_key()}".encode()).hexdigest()


def _disk_path(key: str):
    return config.cache_dir() / "kernels" / f"{key}.o"


def _load_from_disk(key: str) -> tuple[bytes, str] | None:
    """(object code, its code model) from the disk cache, or None when absent, stale or corrupt."""
    if not config.cache_enabled():
        return None
    path = _disk_path(key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = _MAGIC + key.encode() + b"\n"
    if not data.startswith(header):
        return None
    code_model, _, obj = data[len(header):].partition(b"\n")
    if code_model not in (b"small", b"jitdefault"):
        return None
    return obj, code_model.decode()


def _store_on_disk(key: str, obj: bytes, code_model: str) -> None:
    if not config.cache_enabled():
        return
    path = _disk_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(_MAGIC + key.encode() + b"\n" + code_model.encode() + b"\n" + obj)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache directory only costs recompiles


def _load_object(obj: bytes, code_model: str, names: list[str]):
    """An execution engine holding the object code, and the addresses of the named functions."""
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine(code_model),
                                        use_lmm=code_model == "small")
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addresses = [engine.get_function_address(name) for name in names]
    if not all(addresses):
        raise RuntimeError(f"functions {names} missing from their object code")
    return engine, addresses


def _machine_code(key: str, names: list[str], build) -> list[int]:
    """The addresses of `names` in the object code cached on disk under `key`, or in the code that
    build() -> (optimized module, code model) compiles now (and stores). Call with _lock held."""
    cached = _load_from_disk(key)
    engine = None
    if cached is not None:
        try:
            engine, addresses = _load_object(*cached, names)
            STATS.disk_hits += 1
        except Exception:
            engine = None
    if engine is None:
        module_ref, code_model = build()
        obj = _target_machine(code_model).emit_object(module_ref)
        engine, addresses = _load_object(obj, code_model, names)
        STATS.compiles += 1
        _store_on_disk(key, obj, code_model)
    _state["engines"].append(engine)  # the engine owns the code: keep it alive
    return addresses


def compile_kernel(spec: KernelSpec) -> CompiledKernel:
    """The machine-code kernel for a spec: from the memory cache, the disk cache, or compiled now."""
    key = cache_key(spec)
    with _lock:  # llvmlite serializes LLVM calls anyway; the lock also keeps the caches consistent
        memory = _state["memory"]
        if key in memory:
            STATS.memory_hits += 1
            return memory[key]
        [address] = _machine_code(key, [spec.name], lambda: optimized_module(spec))
        kernel = CompiledKernel(spec, KERNEL_TYPE(address), address)
        memory[key] = kernel
        return kernel


def has_wide_vectors() -> bool:
    """Whether this CPU has AVX-512's 512-bit vectors (which native/gemm.py's register tile is sized for)."""
    _target_machine()
    return "+avx512f" in _state["features"]


def host_cpu() -> str:
    """LLVM's name for this CPU ("znver5", "sapphirerapids", ...), which the machine code is built for."""
    _target_machine()
    return _state["cpu"]


def compile_module(label: str, fingerprint: str, build_module, names: list[str]) -> dict[str, int]:
    """The addresses of `names` in the llvmlite.ir module build_module(triple) makes, compiled once
    per machine and cached like kernels, under `label` and `fingerprint` (a hash of the sources
    that build the module: scriptc/native's pieces each have their own)."""
    key = hashlib.sha256(f"{label}|{fingerprint}|{DRIVER_FINGERPRINT}|{_state_key()}".encode()).hexdigest()
    with _lock:
        memory = _state["memory"]
        if key not in memory:
            def build():
                module_ref = llvm.parse_assembly(str(build_module(llvm.get_process_triple())))
                module_ref.verify()
                _optimize(module_ref, _target_machine("small"))
                # Code that calls out (the worker loop's syscall and sched_yield, zero fills that
                # become memset) needs the default code model (as kernels, see optimized_module).
                return module_ref, _code_model(module_ref)
            memory[key] = dict(zip(names, _machine_code(key, names, build)))
        return memory[key]
