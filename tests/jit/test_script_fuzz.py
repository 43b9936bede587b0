"""Script fuzzing: generated functions (typed and ill-typed, supported and refused constructs, deep
nesting) each compile to a graph that verifies, or are refused with a located ScriptError - never
another exception. Bounded when CI is set."""

from __future__ import annotations

import os
import warnings

import pytest

import scriptc as torch
from scriptc.errors import ScriptError
from scriptc.ir import verify

from ..source_util import define
from .script_fuzz import Generator, deep_expressions

COUNT = 150 if os.environ.get("CI") else 400


def _outcome(source: str, name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            fn = define("from typing import Dict\n" + source, name)
        except Exception:  # noqa: BLE001 - not valid Python: not an input jit.script can be given
            return None
    try:
        scripted = torch.jit.script(fn)
    except ScriptError as error:
        assert error.line is not None and error.source_line is not None, str(error)
        return "refused"
    verify(scripted.graph)
    for graph in scripted.functions.values():
        if hasattr(graph, "block"):
            verify(graph)
    return "compiled"


@pytest.mark.invalid_graphs  # refused scripts leave half-built graphs behind
def test_generated_functions_compile_or_are_refused_with_a_located_script_error():
    outcomes = [_outcome(Generator(seed).function(), "fuzzed") for seed in range(COUNT)]
    assert outcomes.count("compiled") > COUNT // 50 and outcomes.count("refused") > COUNT // 2


@pytest.mark.parametrize("index", range(len(deep_expressions(1))))
def test_expressions_500_deep_compile(index):
    source = deep_expressions(500)[index]
    assert _outcome(source, "f") == "compiled"
