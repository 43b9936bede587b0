"""Tensor subclasses (scriptc/tensors/subclass.py) against torch 2.13: as_subclass, results of ops on a
subclass's instances being instances of it, a subclass's own __torch_function__, and Parameter opting out."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _programs(T):
    class Tagged(T.Tensor):
        pass

    class Logged(T.Tensor):
        calls: list = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    class Constant(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "constant"

    class StandIn:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return f"stand-in {func.__name__} of {len(args)}"

    base = T.arange(6.0).reshape(2, 3)

    def gradient():
        leaf = T.ones(3, requires_grad=True)
        (leaf.as_subclass(Tagged) * 2).sum().backward()
        return leaf.grad.tolist()

    def shared_data():
        alias = base.clone().as_subclass(Tagged)
        alias.add_(1)
        return type(alias).__name__, alias.tolist()

    def logged():
        Logged.calls.clear()
        result = T.relu(base.as_subclass(Logged) - 1)
        return type(result).__name__, result.tolist(), "relu" in Logged.calls

    return {
        "as_subclass": lambda: type(base.as_subclass(Tagged)).__name__,
        "operator": lambda: type(base.as_subclass(Tagged) + 1).__name__,
        "reflected operator": lambda: type(1 - base.as_subclass(Tagged)).__name__,
        "method": lambda: type(base.as_subclass(Tagged).sum(0)).__name__,
        "function": lambda: type(T.exp(base.as_subclass(Tagged))).__name__,
        "functional": lambda: type(T.nn.functional.relu(base.as_subclass(Tagged))).__name__,
        "mixed with a plain tensor": lambda: type(base * base.as_subclass(Tagged)).__name__,
        "view": lambda: type(base.as_subclass(Tagged)[0]).__name__,
        "tuple result": lambda: [type(r).__name__ for r in base.as_subclass(Tagged).max(0)],
        "list input": lambda: type(T.cat([base, base.as_subclass(Tagged)])).__name__,
        "values": lambda: (base.as_subclass(Tagged) * 2).tolist(),
        "repr": lambda: repr(base.as_subclass(Tagged) * 2),
        "gradient through it": gradient,
        "shared data": shared_data,
        "own __torch_function__": logged,
        "__torch_function__ result": lambda: base.as_subclass(Constant).sum(),
        "object with __torch_function__": lambda: (T.add(StandIn(), 2), T.relu(StandIn()), T.mul(base, StandIn())),
        "parameter opts out": lambda: type(T.nn.Parameter(base) * 2).__name__,
        "_make_subclass": lambda: (type(T.Tensor._make_subclass(Tagged, base, True)).__name__,
                                   T.Tensor._make_subclass(Tagged, base, True).requires_grad),
        "as_subclass of no subclass": lambda: base.as_subclass(int),
    }


@pytest.mark.parametrize("name", list(_programs(scriptc)))
def test_subclass_behaves_as_torchs(name):
    from tests.torch_errors import raised

    def run(T):
        program = _programs(T)[name]
        return raised(program) or ("value", program())

    ours, theirs = run(scriptc), run(torch)
    assert ours[0] == theirs[0] and (ours[0] != "value" or ours == theirs), (ours, theirs)


def test_disabling_the_protocol_gives_plain_tensors():
    class Tagged(scriptc.Tensor):
        pass

    with scriptc._C.DisableTorchFunctionSubclass():
        assert type(scriptc.ones(2).as_subclass(Tagged) + 1) is scriptc.Tensor
