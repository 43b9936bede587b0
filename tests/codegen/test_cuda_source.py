"""Without a GPU: every kernel of the codegen corpus lowers to CUDA C that nvcc compiles to PTX (sm_90)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import scriptc as torch
from scriptc.codegen.cuda.lower import cuda_source
from scriptc.codegen.kernel import Unsupported, build_spec

from ..ops.cases import CASES
from .test_llvm import POINTWISE

nvcc = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(nvcc is None, reason="nvcc is not installed")


def _groups(fn, examples):
    traced = torch.jit.trace(fn, tuple(torch.tensor(e) for e in examples), check_trace=False)
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    return [n for n in graph.nodes() if n.op == "prim::FusionGroup"]


def _corpus():
    specs = []
    for op in POINTWISE:
        case = CASES[op.name][0]
        positions = [i for i, a in enumerate(case.args) if isinstance(a, np.ndarray)]
        if len(positions) != sum(1 for a in case.args if hasattr(a, "shape") or hasattr(a, "array")):
            continue

        def fn(*tensors, op=op, case=case, positions=positions):
            args = list(case.args)
            for p, t in zip(positions, tensors):
                args[p] = t
            out = torch.tensors.call(op, op.bind(tuple(args), case.kwargs))
            return out * 2 if out.dtype != torch.bool else torch.logical_not(out)
        specs += [(op.name, g) for g in _groups(fn, [case.args[p].astype(np.float32) for p in positions])]
    chains = {
        "gelu_chain": (lambda x, w, b: 0.5 * (x * w + b) * (1 + torch.tanh(0.79788456 * ((x * w + b) + 0.044715 *
                                                                                          (x * w + b) ** 3))),
                       [np.ones((2, 8), np.float32), np.ones(8, np.float32), np.ones(8, np.float32)]),
        "softmax": (lambda x: torch.softmax(x * 2, -1), [np.ones((2, 8), np.float32)]),
        "log_softmax": (lambda x: torch.log_softmax(x - 1, -1), [np.ones((2, 8), np.float64)]),
        "layer_norm": (lambda x: torch.nn.functional.layer_norm(x * 2, [8]), [np.ones((2, 8), np.float32)]),
        "sum": (lambda x: (x * 2).sum(dim=-1), [np.ones((2, 8), np.float32)]),
        "amax": (lambda x: x.abs().amax(dim=-1, keepdim=True), [np.ones((2, 8), np.float32)]),
        "prod": (lambda x: (x * 0.5).prod(dim=-1), [np.ones((2, 8), np.float64)]),
        "sum_dim0": (lambda x, w: (x * w).sum(dim=0), [np.ones((2, 3, 8), np.float32), np.ones(8, np.float32)]),
        "mean_dim1": (lambda x: (x + 1).mean(dim=1, keepdim=True), [np.ones((2, 3, 8), np.float64)]),
        "amin_dim1": (lambda x: (x * 2).amin(dim=1), [np.ones((2, 3, 8), np.float32)]),
        "prod_dim0": (lambda x: (x * 0.5).prod(dim=0), [np.ones((3, 8), np.float32)]),
        "mean_dims23": (lambda x, w: (x * w).mean(dim=(2, 3)), [np.ones((2, 3, 4, 5), np.float32),
                                                               np.ones((3, 1, 1), np.float32)]),
        "sum_all": (lambda x: (x * 2).sum(), [np.ones((2, 3, 4), np.float32)]),
    }
    for name, (fn, examples) in chains.items():
        specs += [(name, g) for g in _groups(fn, examples)]
    return specs


def test_every_corpus_kernel_compiles_to_ptx(tmp_path):
    sources = {}
    for name, group in _corpus():
        try:
            spec = build_spec(group)
        except Unsupported:
            continue
        sources.setdefault(spec.name, (name, cuda_source(spec)))
    # One translation unit for all kernels: nvcc's fixed cost per file, not the kernels, is most of the time.
    path = tmp_path / "corpus.cu"
    path.write_text("\n".join(source for _, source in sources.values()))
    result = subprocess.run([nvcc, "-arch=sm_90", "-ptx", str(path), "-o", str(path.with_suffix(".ptx"))],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    ptx = path.with_suffix(".ptx").read_text()
    missing = [f"{name}:\n{source}" for kernel, (name, source) in sources.items() if f".entry {kernel}(" not in ptx]
    assert not missing, missing[0]
    assert len(sources) >= 30
