"""Whether a runtime value has an IR type: isinstance() in scripted code, and the one walk behind it,
an archive's attribute checks and a call's input checks."""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

import scriptc
from scriptc.ir.parser import MAX_TYPE_NESTING, parse_type
from scriptc.runtime.objects import ScriptObject
from scriptc.runtime.signature import Parameter, Signature
from scriptc.runtime.validate import _type_problem
from scriptc.runtime.values import holds_dtype, scalar_type_numbers, value_has_type
from scriptc.types import EnumValue, device


@pytest.mark.parametrize("value, text, expected", [
    (3, "int", True), (np.int64(3), "int", True), (True, "int", False), (np.bool_(True), "int", False),
    (3, "float", False), (np.float32(1), "float", True), (True, "bool", True), (np.bool_(False), "bool", True),
    (1j, "complex", True), ("s", "str", True), (None, "None", True), (0, "None", False),
    (device("cpu"), "Device", True), (scriptc.float32, "ScalarType", True), ("cpu", "Device", False),
    (np.zeros((2, 3), np.int64), "Tensor(float32, [4])", True),  # isinstance sees only "a tensor"
    (scriptc.zeros(2), "Tensor", True), ([1.0], "Tensor", False),
    ([], "List[int]", True), ([1, 2], "List[int]", True), ([1, "a"], "List[int]", False), ((1, 2), "List[int]", False),
    ((1, "a"), "Tuple[int, str]", True), ((1,), "Tuple[int, str]", False), ([1, "a"], "Tuple[int, str]", False),
    ((1, 2, 3), "Tuple[]", True),  # a bare `tuple`
    ({"a": 1}, "Dict[str, int]", True), ({"a": "b"}, "Dict[str, int]", False),
    (None, "Optional[int]", True), ("a", "int|str", True), (1.5, "int|str", False), (object(), "Any", True),
    (ScriptObject("Tally"), "Object(Tally)", True), (ScriptObject("Other"), "Object(Tally)", False),
    (EnumValue("Mode", "ADD", 1), "Enum(Mode, int)", True), (1, "Enum(Mode, int)", False),
    (1, "Future[int]", False), (1, "Scalar", False),
])
def test_isinstance_judges_a_value_by_its_class_and_its_items(value, text, expected):
    assert value_has_type(value, text) is expected


@pytest.mark.parametrize("value, text, is_instance, attribute_problem, call_problem, taken", [
    # An int is a float for an attribute and an input (which converts it), never for isinstance.
    (2, "float", False, None, None, 2.0),
    (np.int64(2), "Optional[int]", True, None, None, 2),
    ((1, 2), "List[int]", False, "it holds a tuple", None, [1, 2]),
    ([1, 2, 3], "Tuple[int, int]", False, "it holds a list", "a list of 3", None),
    ((1, 2, 3), "Tuple[int, int]", False, "it holds 3 items", "a tuple of 3", None),
    ([1, "a"], "List[int]", False, "it holds 'a'", "element 1: a str", None),
    ({"a": "b"}, "Dict[str, int]", False, "it holds 'b'", None, {"a": "b"}),  # an input's dict goes to the ops as it is
    (1, "Enum(Mode, int)", False, None, "a int", None),  # an archive cannot hold an Enum
    (1.5, "int|str", False, "it holds 1.5", "a float", None),
    (6, "ScalarType", False, None, None, scriptc.float32),  # a dtype as TorchScript hands one out
    ("int64", "ScalarType", False, None, "a str", None),
    (scriptc.int64, "Optional[ScalarType]", True, None, None, scriptc.int64),
])
def test_attributes_and_inputs_are_judged_by_their_own_policies(value, text, is_instance, attribute_problem,
                                                                call_problem, taken):
    t = parse_type(text)
    assert value_has_type(value, text) is is_instance
    assert _type_problem(value, t) == attribute_problem
    signature = Signature("f", [Parameter.of("x", t)])
    if call_problem is None:
        converted = signature.check(signature.parameters[0], value)
        assert converted == taken and type(converted) is type(taken)
    else:
        with pytest.raises(scriptc.SignatureError, match=f"got {call_problem}$"):
            signature.check(signature.parameters[0], value)


def test_the_walk_recurses_once_per_level_of_the_type():
    """A type nested as deep as the IR allows, and a value as deep, within a stack of ~3 frames a
    level: an archive's value cannot reach the recursion limit through its type."""
    levels = MAX_TYPE_NESTING - 1
    text = "List[" * levels + "int" + "]" * levels
    value = 1
    for _ in range(levels):
        value = [value]
    t = parse_type(text)
    signature = Signature("f", [Parameter.of("x", t)])
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 3 * MAX_TYPE_NESTING)
    try:
        assert value_has_type(value, text)
        assert _type_problem(value, t) is None
        assert signature.check(signature.parameters[0], value) == value
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("text, expected", [
    ("ScalarType", True), ("Tensor", False), ("Tuple[int, List[ScalarType]]", True), ("Dict[str, Tensor]", False),
    ("Optional[ScalarType]", True), ("int|ScalarType", True), ("Any", True), ("List[int]", False),
])
def test_result_types_that_can_hold_a_dtype(text, expected):
    assert holds_dtype(parse_type(text)) is expected


def test_a_result_dtype_is_its_scalar_type_number_in_any_container():
    array = np.zeros(2)
    converted = scalar_type_numbers((scriptc.float32, [scriptc.bool], {"d": scriptc.float64}, array, "s"))
    assert converted[:3] == (6, [11], {"d": 7}) and converted[3] is array and converted[4] == "s"
