"""scriptc.distributions: torch.distributions' probability distributions, transforms and kl_divergence."""

from . import constraints  # noqa: F401
from . import transforms  # noqa: F401
from .bernoulli import Bernoulli  # noqa: F401
from .beta import Beta  # noqa: F401
from .categorical import Categorical  # noqa: F401
from .dirichlet import Dirichlet  # noqa: F401
from .distribution import Distribution  # noqa: F401
from .exp_family import ExponentialFamily  # noqa: F401
from .exponential import Exponential  # noqa: F401
from .gamma import Gamma  # noqa: F401
from .independent import Independent  # noqa: F401
from .kl import kl_divergence, register_kl  # noqa: F401
from .laplace import Laplace  # noqa: F401
from .multivariate_normal import MultivariateNormal  # noqa: F401
from .normal import Normal  # noqa: F401
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough  # noqa: F401
from .transformed_distribution import LogNormal, TransformedDistribution  # noqa: F401
from .transforms import (  # noqa: F401
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    TanhTransform,
    Transform,
)
from .uniform import Uniform  # noqa: F401
