"""torch.linalg: linear algebra (norms, inverses and solvers, decompositions, products).

Each function is an op of the table named `linalg_<name>`, as in ATen, so eager calls, tracing and
the runtime see the same op; torch.linalg.matmul is torch.matmul. cond, vander, solve_ex, tensorinv,
tensorsolve and householder_product are compositions of those ops (scriptc/linalg_composites.py).
"""

from scriptc import bindings as _bindings
from scriptc.errors import LinAlgError  # noqa: F401  (torch.linalg.LinAlgError)
from scriptc.torch_names import missing_attribute as _missing_attribute

globals().update(_bindings.namespace("linalg_", __name__))
matmul = _bindings.FUNCTIONS["matmul"]

from scriptc.linalg_composites import cond, householder_product, solve_ex, tensorinv, tensorsolve, vander  # noqa: E402,F401


def __dir__():
    return sorted(name for name in globals() if not name.startswith("_"))


__getattr__ = _missing_attribute("torch.linalg", __name__)
