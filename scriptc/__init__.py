"""scriptc: a PyTorch-style eager API, a tracing/scripting JIT to native code, and a standalone runtime.

`import scriptc as torch` runs PyTorch code that uses the supported ops. The
torch-like names are loaded lazily (PEP 562), so `import scriptc.runtime`
pulls in only what the deployment runtime needs.
"""

from __future__ import annotations

import importlib
import math as _math

from scriptc.errors import (  # noqa: F401
    ArchiveError, CallError, ScriptError, ServeError, ShapeError, SignatureError, TracerWarning)
from scriptc.types import (  # noqa: F401
    bfloat16,
    bool_ as bool,
    channels_last,
    channels_last_3d,
    complex64,
    complex128,
    contiguous_format,
    device,
    dtype,
    memory_format,
    preserve_format,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    qscheme,
    quint8,
    uint8,
)

__version__ = "0.1.0"

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None

_SUBMODULES = {
    "ao", "quantization",
    "nn", "optim", "jit", "autograd", "ops", "ir", "passes", "codegen", "runtime", "cuda", "serving",
    "types", "config", "errors", "bindings", "testing",
    "random",
    "linalg",
    "sparse",
    "functional",
    "utils",
    "distributions",
    "serialization",
    "multiprocessing",
    "grad_mode",
    "fft",
    "special",
    "_C",
    "_awaits",
    "futures",
    "fx",
    "backends",
    "accelerator",
    "amp",
    "cpu",
    "settings",
    "version",
    "distributed",
    "compiler",
    "_dynamo",
    "hub",
    "func",
    "profiler",
    "signal",
    "return_types",
    "quasirandom",
    "onnx",
    "__future__",
    "library",
    "export",
    "xpu",
    "masked",
}
# Names defined in a submodule, loaded on first use (one module a line).
_LAZY_NAMES = {
    "scriptc.tensors": {"Tensor", "Size", "tensor", "from_numpy", "as_tensor"},
    "scriptc.autograd": {"no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
                         "is_inference_mode_enabled"},
    "scriptc.autograd.anomaly_mode": {"is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled"},
    "scriptc.random": {"Generator", "default_generator", "seed", "initial_seed", "get_rng_state", "set_rng_state"},
    "scriptc.sparse": {"sparse_coo_tensor", "sparse_coo", "strided"},
    "scriptc.runtime.parallel": {"set_num_threads", "get_num_threads", "set_num_interop_threads",
                                 "get_num_interop_threads"},
    "scriptc.serialization": {"save", "load"},
    "scriptc.jit.markers": {"_check"},
    "scriptc.jit.script_containers": {"ScriptList", "ScriptDict"},
    "scriptc.functional": {"broadcast_shapes", "promote_types", "result_type", "can_cast", "einsum", "histogramdd"},
    "scriptc.dtype_info": {"finfo", "iinfo"},
    "scriptc.spectral": {"stft", "istft"},
    "scriptc.func": {"vmap"},
    "scriptc.linalg_composites": {"triangular_solve", "lu", "lu_solve", "orgqr", "ormqr"},
    "scriptc.numerics": {"cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "vander",
                         "combinations", "renorm", "cholesky_solve", "cholesky_inverse"},
    "scriptc.tensor_functions": {"detach", "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_conj",
                                 "resolve_conj", "resolve_neg", "unsafe_chunk", "unsafe_split",
                                 "unsafe_split_with_sizes", "split_with_sizes", "asarray", "range", "scalar_tensor",
                                 "empty_strided", "empty_permuted", "typename", "nonzero_static", "cond",
                                 "unravel_index", "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy",
                                 "expand_copy", "permute_copy", "select_copy", "slice_copy", "split_copy",
                                 "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
                                 "unfold_copy", "unsqueeze_copy", "view_copy", "view_as_real_copy",
                                 "view_as_complex_copy"},
    "scriptc.aten_functions": {"embedding", "embedding_bag", "batch_norm", "instance_norm", "layer_norm", "group_norm",
                               "native_layer_norm", "native_batch_norm", "ctc_loss", "kl_div",
                               "binary_cross_entropy_with_logits", "cosine_embedding_loss", "hinge_embedding_loss",
                               "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss", "adaptive_max_pool1d",
                               "max_pool1d_with_indices", "grid_sampler", "affine_grid_generator"},
    "scriptc.nn.functional": {"cosine_similarity", "pairwise_distance", "pdist", "bilinear", "conv_tbc"},
    "scriptc.legacy": {"FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
                       "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"},
    "scriptc.amp": {"autocast"},
    "scriptc.amp.state": {"is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
                          "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
                          "autocast_decrement_nesting", "clear_autocast_cache", "is_autocast_cpu_enabled",
                          "get_autocast_cpu_dtype", "get_autocast_gpu_dtype"},
    "scriptc.settings": {"set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
                         "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
                         "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
                         "get_deterministic_debug_mode", "set_float32_matmul_precision",
                         "get_float32_matmul_precision", "set_default_tensor_type", "set_warn_always",
                         "is_warn_always_enabled", "set_flush_denormal"},
    "scriptc.tensors.printing": {"set_printoptions"},
    "scriptc.compiler.entry": {"compile"},
    "scriptc.tensors.storage": {"frombuffer", "UntypedStorage", "TypedStorage"},
}


def manual_seed(seed: int):
    """Seed the default generator (behind rand, randn, randint, dropout, nn.init); returns it."""
    from scriptc.ops.generator import manual_seed as seed_default
    return seed_default(seed)


def is_tensor(obj) -> bool:
    from scriptc.tensors import Tensor
    return isinstance(obj, Tensor)


def is_complex(t) -> bool:
    return t.is_complex()


def is_floating_point(t) -> bool:
    return t.is_floating_point()


def numel(t) -> int:
    return t.numel()


def _assert(condition, message: str) -> None:
    """torch._assert: AssertionError(message) when condition (a bool or one-element tensor) is false."""
    assert condition, message


def from_dlpack(obj):
    import numpy as np
    from scriptc.tensors import from_numpy
    return from_numpy(np.from_dlpack(obj))


def __getattr__(name: str):
    if name in _SUBMODULES:
        try:
            return importlib.import_module(f"scriptc.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"scriptc.{name}":
                raise
    for module, names in _LAZY_NAMES.items():
        if name in names:
            from scriptc import bindings  # noqa: F401  (installs the Tensor methods)
            return getattr(importlib.import_module(module), name)
    if name.startswith("_foreach_"):
        from scriptc.foreach import FOREACH_OPS
        if name in FOREACH_OPS:
            return FOREACH_OPS[name]
    from scriptc import bindings
    if name in bindings.FUNCTIONS:
        value = bindings.FUNCTIONS[name]
        globals()[name] = value  # later lookups skip this function
        return value
    from scriptc.torch_names import missing
    raise missing("torch", "module 'scriptc'", name, __dir__())


def __dir__():
    from scriptc import bindings
    return sorted(set(globals()) | _SUBMODULES | set().union(*_LAZY_NAMES.values()) | set(bindings.FUNCTIONS))
