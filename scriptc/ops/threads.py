"""torch.set_num_threads and friends in scripted code (runtime/parallel.py keeps the settings)."""

from __future__ import annotations

from scriptc.types import Int, NoneType

from .pyvalues import fixed, python_op


def _parallel():
    from scriptc.runtime import parallel

    return parallel


for _name in ("set_num_threads", "set_num_interop_threads"):
    python_op(f"{_name}(n: int) -> None", (lambda name: lambda n: getattr(_parallel(), name)(n))(_name),
              fixed(NoneType), effects=True)
for _name in ("get_num_threads", "get_num_interop_threads"):
    python_op(f"{_name}() -> int", (lambda name: lambda: getattr(_parallel(), name)())(_name), fixed(Int),
              effects=True)
