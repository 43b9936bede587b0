"""A module's forward pre-hooks and hooks checked against its forward when it is scripted, in torch's
words (jit/frontend/compile/hook_schemas.py): the hook's input tuple, a pre-hook's result, a hook's
output parameter, and hook names."""

from __future__ import annotations

from typing import Optional, Tuple

import pytest

import scriptc

torch = pytest.importorskip("torch")


def _module(engine, pre_hooks=(), hooks=(), on_inner: bool = False):
    class Inner(engine.nn.Module):
        def helper(self, name: str) -> str:
            return name

        def forward(self, name: str) -> str:
            return self.helper(name) + "!"

    class Outer(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, name: str) -> str:
            return self.inner(name + "_")

    module = Outer()
    target = module.inner if on_inner else module
    for hook in pre_hooks:
        target.register_forward_pre_hook(hook)
    for hook in hooks:
        target.register_forward_hook(hook)
    return module


def pre_two_inputs(self, input: Tuple[str], extra: str) -> Tuple[str]:
    return input


def pre_not_a_tuple(self, input: int) -> Tuple[str]:
    return ("a",)


def pre_wrong_result(self, input: Tuple[str]) -> int:
    return 1


def pre_optional_result(self, input: Tuple[str]) -> Optional[Tuple[str]]:
    return None


def pre_no_return_annotation(self, input: Tuple[str]):
    return input


def hook_two_strings(self, input: Tuple[str, str], output: str):
    return output


def hook_wrong_output(self, input: Tuple[str], output: Tuple[str]):
    return output


def helper(self, input: Tuple[str]) -> Tuple[str]:
    return input


BAD = [
    ([pre_two_inputs], [], False, "was expected to only have exactly 2 inputs but it had 3 inputs"),
    ([pre_not_a_tuple], [], False, "expected the input argument to be typed as a Tuple but found type: 'int' instead"),
    ([pre_wrong_result], [], True, "returned the wrong type of: 'int'"),
    ([pre_optional_result], [], False, r"returned the wrong type of: 'Optional\[Tuple\[str\]\]'"),
    ([pre_no_return_annotation], [], False, "is missing a return annotation"),
    ([], [hook_two_strings], True, r"has the wrong number of contained types for the input argument's Tuple. "
                                   r"Received type: 'Tuple\[str, str\]'"),
    ([], [hook_wrong_output], False, r"has the wrong type for the output argument. Received type: 'Tuple\[str\]'. "
                                     "Expected type: 'str'"),
    ([helper], [], True, "Can't define hook: helper on class: .+ because a method or hook with that name already "
                         "exists"),
]


@pytest.mark.parametrize("pre_hooks, hooks, on_inner, message", BAD)
def test_a_hook_that_does_not_fit_forward_is_refused_in_torchs_words(pre_hooks, hooks, on_inner, message):
    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match=message):
            engine.jit.script(_module(engine, pre_hooks, hooks, on_inner))


def test_two_hooks_of_one_name_are_refused():
    def twice(self, input: Tuple[str]) -> Tuple[str]:
        return input

    first = twice

    def twice(self, input: Tuple[str]) -> Tuple[str]:  # noqa: F811 - (a second function of that name)
        return ("b",)

    for engine in (torch, scriptc):
        with pytest.raises(RuntimeError, match="Pre-hook 'twice' on Inner has at least two different python "
                                               "definitions. Please use unique names for all hooks."):
            engine.jit.script(_module(engine, [first, twice], on_inner=True))


def _results(engine):
    def pre(self, input: Tuple[str]) -> str:  # a single value stands for the one input
        return input[0] + "p"

    def post(self, input: Tuple[str], output: str) -> Tuple[str, str]:
        return output, input[0]

    def last(self, input: Tuple[str], output: Tuple[str, str]) -> str:
        return output[0] + output[1]

    module = _module(engine, [pre], [post, last], on_inner=True)
    scripted = engine.jit.script(module)
    return module("a"), scripted("a"), scripted.inner("b"), scripted.inner.forward("b")


def test_hooks_that_fit_run_as_torchs_do():
    assert _results(scriptc) == _results(torch)
