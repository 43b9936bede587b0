"""TransformedDistribution (torch.distributions.TransformedDistribution) and LogNormal, its simplest case."""

from __future__ import annotations

from scriptc.autograd import no_grad
from scriptc.tensors import Size

from . import constraints
from .distribution import Distribution, as_size
from .independent import Independent
from .normal import Normal
from .transforms import ComposeTransform, ExpTransform, Transform
from .utils import sum_rightmost

__all__ = ["TransformedDistribution", "LogNormal"]


class TransformedDistribution(Distribution):
    """The distribution of T_n(...T_1(x)) for x from `base_distribution`; log_prob adds the
    log |det J| of each inverse step."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = Size(tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape))
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {transform.domain.event_dim}, "
                             f"but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if tuple(base_shape) != tuple(expanded_base_shape):
            base_distribution = base_distribution.expand(expanded_base_shape[:len(expanded_base_shape) - base_event_dim])
        reinterpreted_batch_ndims = transform.domain.event_dim - base_event_dim
        if reinterpreted_batch_ndims > 0:
            base_distribution = Independent(base_distribution, reinterpreted_batch_ndims)
        self.base_dist = base_distribution
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform.codomain.event_dim - transform.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        shape = tuple(batch_shape) + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        return self._expanded(TransformedDistribution, batch_shape, _instance, base_dist=base,
                              transforms=self.transforms)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with no_grad():
            return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()):
        return self._forward(self.base_dist.rsample(sample_shape))

    def _forward(self, x):
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        return self._forward(self.base_dist.icdf(self._monotonize_cdf(value)))


class LogNormal(TransformedDistribution):
    """exp of a Normal(loc, scale) variable."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
