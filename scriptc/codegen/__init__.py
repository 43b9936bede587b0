"""scriptc.codegen: the kernel spec (kernel.py) and its two backends, llvm/ and cuda/."""
