"""LLVM lowering of the kernel spec, and the driver that compiles and caches it."""
