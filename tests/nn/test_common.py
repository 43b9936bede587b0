"""scriptc/nn/common.py against torch 2.13: torch.nn.modules.utils' tuple normalizers (_single ...
_quadruple), eagerly and as TorchScript's builtins in scripted code; layers built with a negative size
raise torch's RuntimeError."""

from typing import List, Tuple

import pytest

import scriptc
from tests.torch_errors import raised


def _normalized(lib):
    utils = lib.nn.modules.utils

    def normalize(size: List[int], triple: Tuple[int, int, int], side: int):
        return utils._pair(size), utils._triple(triple), utils._single(size), utils._quadruple(side)

    return normalize


def test_tuple_normalizers_in_scripted_code_match_torch():
    torch = pytest.importorskip("torch")
    args = ([3, 4], (1, 2, 3), 5)
    ours = scriptc.jit.script(_normalized(scriptc))(*args)
    assert ours == torch.jit.script(_normalized(torch))(*args)
    assert ours == ([3, 4], [1, 2, 3], [3, 4], [5, 5, 5, 5])
    assert _normalized(scriptc)(*args) == ((3, 4), (1, 2, 3), (3, 4), (5, 5, 5, 5))


@pytest.mark.parametrize("build", [
    lambda nn: nn.Linear(-1, 3),
    lambda nn: nn.Linear(3, -2),
    lambda nn: nn.Embedding(-1, 3),
    lambda nn: nn.LayerNorm(-1),
    lambda nn: nn.BatchNorm2d(-1),
])
def test_a_negative_size_raises_torchs_error(build):
    torch = pytest.importorskip("torch")
    expected = raised(lambda: build(torch.nn))
    assert expected is not None and expected[0] is RuntimeError
    assert raised(lambda: build(scriptc.nn)) == expected
