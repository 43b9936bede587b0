"""Calls into scripted functions (Python values converted as torch binds them) and call forms inside them."""
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


def _index_by_method(x: torch.Tensor, items: List[int]):
    indices = torch.tensor([0, 2], dtype=torch.long)
    return x.__getitem__(indices), items.__getitem__(-1)


def test_getitem_called_as_a_method_indexes():
    x = torch.rand(3, 4)
    got, last = torch.jit.script(_index_by_method)(x, [4, 5, 6])
    want, _ = _index_by_method(x, [4, 5, 6])
    assert last == 6 and got.tolist() == want.tolist()


def _getitem_without_index(x: torch.Tensor):
    return x.__getitem__()


def test_getitem_without_an_index_is_refused():
    with pytest.raises(RuntimeError, match="expected exactly 1 argument"):
        torch.jit.script(_getitem_without_index)


def _slice_with_keyword(x: List[int]):
    return x[slice(1, stop=2)]


def test_slice_refuses_keyword_arguments():
    with pytest.raises(RuntimeError, match="Slice does not accept any keyword arguments"):
        torch.jit.script(_slice_with_keyword)
