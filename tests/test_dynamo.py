"""torch._dynamo's reset, config.recompile_limit and marks, against torch 2.13."""

from __future__ import annotations

import pytest

import scriptc

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("torch_validation_kept")


def test_recompile_limit_caps_the_programs_a_function_gets():
    before = scriptc._dynamo.config.recompile_limit
    assert before == torch._dynamo.config.recompile_limit == scriptc._dynamo.config.cache_size_limit
    scriptc._dynamo.config.recompile_limit = 2
    try:
        with pytest.warns(UserWarning):
            compiled = scriptc.compile(lambda x: x * 2 + 1)
            results = [compiled(scriptc.ones(n)) for n in (1, 2, 3, 4)]
        assert [r.sum().item() for r in results] == [3.0, 6.0, 9.0, 12.0]
        assert len(compiled._scriptc_compiled._programs) == 2
    finally:
        scriptc._dynamo.config.recompile_limit = before
    scriptc._dynamo.reset()


def _doubled(x):
    return x * 2


def test_marks_check_their_dims_and_allow_in_graph_returns_the_function():
    # (a function of the test's own: torch's allow_in_graph of a builtin such as len stays in force for
    # the process and breaks torch.cond's tracing in later tests)
    for T in (scriptc, torch):
        x = T.ones(2, 3)
        T._dynamo.mark_dynamic(x, 0)
        T._dynamo.mark_static(x, 1)
        assert T._dynamo.allow_in_graph(_doubled) is _doubled
    with pytest.raises(IndexError, match="dim 2 is out of range for a tensor with 2 dims"):
        scriptc._dynamo.mark_dynamic(scriptc.ones(2, 3), 2)
