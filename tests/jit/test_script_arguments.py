"""Python values passed into scripted functions, converted as torch's argument binding does."""
from typing import List

import pytest

import scriptc as torch


def _every_other(x: List[int]) -> List[int]:
    return x[slice(0, 6, 2)]


def test_a_range_is_accepted_for_a_list_parameter():
    scripted = torch.jit.script(_every_other)
    assert scripted(range(10)) == [0, 2, 4]
    assert scripted((5, 6, 7)) == [5, 7]
    with pytest.raises(TypeError, match="Expected a value of type 'List\\[int\\]' for argument 'x'"):
        scripted("abc")
