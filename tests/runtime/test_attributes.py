"""Module attributes in an archive's manifest (scriptc/runtime/attributes.py)."""

import io
from typing import List, Optional, Tuple, Union

import pytest

import scriptc as torch
from scriptc import runtime
from scriptc.errors import ArchiveError
from scriptc.runtime import attributes
from scriptc.types import Float, Int, ListType, Str, TupleType, UnionType


class UnionAttributes(torch.nn.Module):
    x: Union[int, str]
    pair: Union[List[int], Tuple[int, int]]
    scale: Optional[Union[float, List[float]]]

    def __init__(self, x):
        super().__init__()
        self.x = x
        self.pair = (1, 2)
        self.scale = [1.0, 2.0]

    def forward(self, y: Union[int, str]):
        before = self.x
        self.x = y
        return before, self.pair, self.scale


@pytest.mark.parametrize("first, then", [(2, "bar"), ("foo", 3)])
def test_union_typed_attributes_round_trip(first, then):
    """A Union-typed attribute keeps the member its value has (upstream
    test_union.test_union_module_with_union_instance_variable saved it; it was refused)."""
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(UnionAttributes(first)), buffer)
    expected = (first, (1, 2), [1.0, 2.0])
    for load in (torch.jit.load, runtime.load):
        buffer.seek(0)
        loaded = load(buffer)
        assert loaded(then) == expected


@pytest.mark.parametrize("value, t", [
    ((1, 2), UnionType((ListType(Int), TupleType((Int, Int))))),
    ([1, 2], UnionType((TupleType((Int, Int)), ListType(Int)))),
    (2, UnionType((Float, Int))),
    ("s", UnionType((Int, Str))),
])
def test_a_union_value_decodes_as_the_member_it_was(value, t):
    decoded = attributes.decode("a", attributes.encode(value, t))
    assert decoded == value and type(decoded) is type(value)


def test_a_union_member_the_type_lacks_is_an_archive_error():
    entry = attributes.encode(1, UnionType((Int, Str)))
    entry["value"]["member"] = "float"
    with pytest.raises(ArchiveError, match="float is no member of int|str"):
        attributes.decode("a", entry)
