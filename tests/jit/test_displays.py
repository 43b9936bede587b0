"""List and dict displays whose items have no one type: typed as a Union with torch's warning, and
dict() of generated items checked against the annotation, in torch's words."""

import warnings
from typing import Dict

import pytest

import scriptc


def mixed_list():
    items = [1, "a", 2.0]
    first = items[0]
    assert isinstance(first, int)
    return items, first + 1


def mixed_dict_values():
    return {"a": 1, "b": "x"}


def mixed_dict_keys():
    return {1: 1, "b": 2}


def generated_keys_of_two_types():
    keys = [1, 2, "foo", 3]
    values = ["foo", "bar", "baz", "qux"]
    d: Dict[int, str] = dict(zip(keys, values))
    return d


def generated_values_of_two_types():
    keys = ["foo", "bar", "baz", "qux"]
    values = [1, 2, "foo", 3]
    d: Dict[str, int] = dict(zip(keys, values))
    return d


@pytest.mark.parametrize("fn", [mixed_list, mixed_dict_values])
def test_a_display_of_mixed_items_is_a_union_and_warns(fn):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.jit.script(fn)()
    with pytest.warns(UserWarning, match="heterogeneous types, which means that .* typed as containing "
                                         r".*Union\[(float, int, str|int, str)\]"):
        scripted = scriptc.jit.script(fn)
    assert scripted() == expected


@pytest.mark.parametrize("fn, message", [
    (mixed_dict_keys, "Dict keys must contain only a single type. Expected: int but found str instead"),
    (generated_keys_of_two_types, r"Dicts may only contain homogeneous keys, but the type of the first generated key "
                                  r"was Union\[int, str\]"),
    (generated_values_of_two_types, r"Dict type annotation `Dict\[str, int\]` did not match the type of an actual "
                                    r"value type `Union\[int, str\]`"),
])
def test_dict_items_of_two_types_are_refused_in_torchs_words(fn, message):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=message):
            torch.jit.script(fn)
        with pytest.raises(RuntimeError, match=message):
            scriptc.jit.script(fn)
