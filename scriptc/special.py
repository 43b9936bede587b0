"""torch.special: special functions (error and gamma families, Bessel functions, zeta, orthogonal polynomials,
the normal distribution's CDF and quantile).

Functions torch has no other name for are ops of the table named `special_<name>`, as in ATen; the rest
are the same functions as torch.<name> (torch.special.expit is torch.sigmoid, gammaln is lgamma).
"""

from scriptc import bindings as _bindings
from scriptc.torch_names import missing_attribute as _missing_attribute

globals().update(_bindings.namespace("special_", __name__))
_SAME_AS_TORCH = {"digamma": "digamma", "psi": "digamma", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv",
                  "exp2": "exp2", "expm1": "expm1", "expit": "sigmoid", "gammaln": "lgamma", "i0": "i0",
                  "modified_bessel_i0": "i0", "log1p": "log1p", "log_softmax": "log_softmax", "logit": "logit",
                  "logsumexp": "logsumexp", "multigammaln": "mvlgamma", "polygamma": "polygamma", "round": "round",
                  "sinc": "sinc", "softmax": "softmax", "xlogy": "xlogy", "gammainc": "igamma",
                  "gammaincc": "igammac"}
globals().update({name: _bindings.FUNCTIONS[target] for name, target in _SAME_AS_TORCH.items()})
modified_bessel_i1 = i1  # noqa: F821  (defined by the namespace update above)


__getattr__ = _missing_attribute("torch.special", __name__)


def __dir__():
    return sorted(name for name in globals() if not name.startswith("_"))
