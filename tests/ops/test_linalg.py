"""Matrix products and convolutions (scriptc/ops/linalg.py): operands of mixed dtypes are refused in torch's words."""

from __future__ import annotations

import pytest

import scriptc

MIXED = [
    lambda T: T.ones(2, 3) @ T.ones(3, 2).double(),
    lambda T: T.ones(2, 3, 4) @ T.ones(4, 2).int(),
    lambda T: T.mm(T.ones(2, 3), T.ones(3, 2).double()),
    lambda T: T.nn.functional.linear(T.ones(2, 3), T.ones(2, 3).double()),
    lambda T: T.nn.functional.linear(T.ones(2, 3).double(), T.ones(2, 3), T.ones(2)),
    lambda T: T.nn.functional.conv2d(T.ones(1, 1, 3, 3), T.ones(1, 1, 1, 1).double()),
]


@pytest.mark.parametrize("build", MIXED, ids=[str(i) for i in range(len(MIXED))])
def test_mixed_dtypes_are_refused_as_torch_words_it(build):
    torch = pytest.importorskip("torch")
    messages = []
    for lib in (scriptc, torch):
        with pytest.raises(RuntimeError) as info:
            build(lib)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
