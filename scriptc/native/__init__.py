"""Hand-written native code that is not generated from a kernel spec: the compiled GEMM, im2col and
few-row matmul loops and the executor's heads that call them (heads.py), the worker threads of the
runtime's pool, the chain program, the JSON number scan, and numpy's BLAS found for native callers.

Each piece builds an llvmlite.ir module that the LLVM driver (codegen/llvm/driver.py) compiles and
caches on disk under a fingerprint of that piece's own sources (build.py), so editing one of them
recompiles it alone - never a model's kernels, never another piece.
"""
