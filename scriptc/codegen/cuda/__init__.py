"""CUDA C from the shared kernel spec (compiled with NVRTC through cupy on a GPU)."""
