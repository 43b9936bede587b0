"""torch.jit.script of a list or dict (scriptc/jit/script_containers.py): a ScriptList / ScriptDict
behaves as the Python container does (upstream test_list_dict TestScriptList / TestScriptDict
compare each operation with the plain container), checks item types with a TypeError, and keeps
reference semantics: a scripted function's mutation is seen by the caller."""

from typing import Dict, List

import pytest

import scriptc as torch


def _same_as_python(fn, data):
    plain, scripted = (data.copy(), torch.jit.script(data.copy()))
    outcomes = []
    for container in (plain, scripted):
        try:
            result = fn(container)
            if isinstance(result, (torch.ScriptList, torch.ScriptDict)):
                result = list(result) if isinstance(result, torch.ScriptList) else dict(result.items())
            outcomes.append(("ok", result))
        except Exception as exc:  # noqa: BLE001 - the plain container's exception type is the expectation
            outcomes.append(("raised", type(exc)))
    assert outcomes[0] == outcomes[1]
    assert list(plain) == list(scripted)
    if isinstance(plain, dict):
        assert plain == dict(scripted.items())


def _set_items(values):
    values[1] = 10
    values[-1] = 12


def _set_slices(values):
    values[:4:2] = [10, 11]
    values[-2:] = [15, 16]


def _delete(values):
    del values[1]


def _delete_missing(values):
    del values[10]


@pytest.mark.parametrize("fn", [
    repr, bool, len, lambda v: sum(x for x in v), lambda v: v[1], lambda v: v[-1], lambda v: v[1:3], lambda v: v[-1::-1],
    lambda v: v[5], lambda v: v["key"], _set_items, _set_slices, _delete, _delete_missing,
    lambda v: (1 in v, 5 not in v), lambda v: v.count(3), lambda v: v.remove(1), lambda v: v.remove(10),
    lambda v: v.append(1), lambda v: v.clear(), lambda v: v.extend([4, 5]), lambda v: v.extend({4: 10}),
    lambda v: v.insert(-2, 3), lambda v: v.pop(), lambda v: v.pop(2), lambda v: v.pop(10),
])
def test_a_script_list_behaves_as_a_list(fn):
    _same_as_python(fn, [1, 2, 3, 4])


def _set_values(d):
    d[1] = 10
    d[3] = 11


@pytest.mark.parametrize("fn", [
    repr, bool, len, lambda d: sum(k for k in d), lambda d: sum(k * v for k, v in d.items()), lambda d: d[1],
    lambda d: d[4], lambda d: d["key"], _set_values, lambda d: (1 in d, 2 not in d), _delete, _delete_missing,
])
def test_a_script_dict_behaves_as_a_dict(fn):
    _same_as_python(fn, {1: 2, 3: 4})


def test_items_of_the_wrong_type_are_a_type_error():
    values, mapping = torch.jit.script([1]), torch.jit.script({1: 2})
    for refused in (lambda: values.append("a"), lambda: values.__setitem__(0, "a"), lambda: "a" in values,
                    lambda: values.count("a"), lambda: values.extend(["a"]), lambda: values.insert((0, "a")),
                    lambda: mapping.__setitem__("a", 3), lambda: mapping.__setitem__(3, "a"),
                    lambda: mapping.__delitem__("a")):
        with pytest.raises(TypeError):
            refused()
    with pytest.raises(KeyError):
        "a" in mapping  # noqa: B015 - the lookup is the check


def _append(values: List[int], item: int):
    values.append(item)


def _insert(mapping: Dict[int, int], key: int, value: int):
    mapping[key] = value


def test_a_scripted_functions_mutations_are_seen_by_the_caller():
    values, mapping = torch.jit.script([1, 2]), torch.jit.script({1: 2})
    torch.jit.script(_append)(values, 3)
    torch.jit.script(_insert)(mapping, 3, 4)
    assert list(values) == [1, 2, 3] and values[2] == 3
    assert len(mapping) == 2 and mapping[3] == 4
    plain = [1, 2]
    torch.jit.script(_append)(plain, 3)
    assert plain == [1, 2]  # (a plain list is copied, as torch copies it)


def test_an_empty_container_holds_tensors():
    assert repr(torch.jit.script([])) == "[]"
    with pytest.raises(TypeError):
        torch.jit.script([]).append(1)
    with pytest.raises(TypeError):
        torch.jit.script({})["x"] = 1
