"""torch.nn.modules.utils' tuple normalizers (_single ... _quadruple), eagerly and as TorchScript's builtins
in scripted code, against torch 2.13."""

from typing import List, Tuple

import pytest

import scriptc


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
