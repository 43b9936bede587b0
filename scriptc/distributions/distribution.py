"""Distribution: the base class of every probability distribution (torch.distributions.Distribution)."""

from __future__ import annotations

import warnings
from numbers import Number

from scriptc.autograd import no_grad
from scriptc.tensors import Size, Tensor

from . import constraints
from .utils import broadcast_all, lazy_property

__all__ = ["Distribution"]


def as_size(shape) -> Size:
    return shape if isinstance(shape, Size) else Size(tuple(shape))


class Distribution:
    """A batch of distributions of one family: `batch_shape` independent ones, each over events of
    `event_shape`. Arguments are checked against `arg_constraints` and samples against `support`
    when validation is on (the default, as torch's `__debug__`; `validate_args=False` or
    `Distribution.set_default_validate_args(False)` turns it off)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for every distribution made afterwards."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                              "or initialize the distribution with `validate_args=False` to turn off validation.",
                              stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # the other parametrization was given (probs for logits)
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """A new distribution with parameters broadcast to `batch_shape` (views, no copies)."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """Draw samples of shape sample_shape + batch_shape + event_shape, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Draw reparameterized samples: gradients flow back to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """The errors torch raises for a log_prob/cdf argument of the wrong type, shape or support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual, expected = value.shape, Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please initialize "
                          "the distribution with `validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _expanded(self, cls, batch_shape, _instance=None, **params) -> "Distribution":
        """torch's expand pattern: an instance of `cls` (or `_instance`) with the given (expanded)
        attributes, this event shape, the new batch shape, and this one's validation setting."""
        new = self._get_checked_instance(cls, _instance)
        for name, value in params.items():
            setattr(new, name, value)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _broadcast_params(self, **params) -> Size:
        """Store the parameters (numbers or tensors) broadcast to one shape; returns the batch shape,
        () when every parameter was a Python number."""
        values = broadcast_all(*params.values())
        for name, value in zip(params, values):
            setattr(self, name, value)
        return Size() if all(isinstance(v, Number) for v in params.values()) else values[0].size()

    def _expand_params(self, cls, batch_shape, _instance, *names) -> "Distribution":
        """expand() for a distribution whose parameters `names` all have the batch shape."""
        batch_shape = as_size(batch_shape)
        return self._expanded(cls, batch_shape, _instance, **{n: getattr(self, n).expand(batch_shape) for n in names})

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return f"{type(self).__name__}({args})"
