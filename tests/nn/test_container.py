"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict behave as torch's."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _layers(T, n=4):
    return [T.nn.Linear(i + 1, i + 2) for i in range(n)]


def _both(build):
    return build(scriptc), build(torch)


def _same(ours, theirs):
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_sequential_indexing_slicing_and_editing():
    for edit in [lambda s, T: s[1:3], lambda s, T: s[::-1], lambda s, T: s.append(T.nn.ReLU()),
                 lambda s, T: s.insert(1, T.nn.Tanh()), lambda s, T: s.insert(-1, T.nn.Tanh()),
                 lambda s, T: s.extend([T.nn.ReLU(), T.nn.Tanh()]), lambda s, T: s + T.nn.Sequential(T.nn.ReLU()),
                 lambda s, T: s * 2, lambda s, T: (s.__delitem__(1), s)[1], lambda s, T: (s.pop(0), s)[1],
                 lambda s, T: (s.__delitem__(slice(0, 2)), s)[1], lambda s, T: s.__iadd__(T.nn.Sequential(T.nn.ReLU()))]:
        _same(*_both(lambda T: edit(T.nn.Sequential(*_layers(T)), T)))
    ours, theirs = _both(lambda T: T.nn.Sequential(OrderedDict(a=T.nn.ReLU(), b=T.nn.Tanh())))
    _same(ours, theirs)
    assert isinstance(ours[-1], scriptc.nn.Tanh) and len(ours) == 2
    ours[0] = scriptc.nn.Sigmoid()
    assert isinstance(ours.a, scriptc.nn.Sigmoid)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ours[5]
    with pytest.raises(IndexError, match="Index out of range: 4"):
        ours.insert(4, scriptc.nn.ReLU())
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        ours + [scriptc.nn.ReLU()]
    assert all(not k.isdigit() for k in dir(scriptc.nn.Sequential(scriptc.nn.ReLU())))


def test_sequential_runs_in_order():
    model = scriptc.nn.Sequential(scriptc.nn.Linear(2, 3), scriptc.nn.ReLU(), scriptc.nn.Linear(3, 1))
    x = scriptc.randn(4, 2)
    np.testing.assert_allclose(model(x).detach().numpy(), model[2](model[1](model[0](x))).detach().numpy())


def test_module_list_editing_and_repr_runs():
    for edit in [lambda m, T: m[1:], lambda m, T: (m.insert(1, T.nn.ReLU()), m)[1],
                 lambda m, T: m.extend([T.nn.ReLU()]), lambda m, T: m + T.nn.ModuleList([T.nn.Tanh()]),
                 lambda m, T: (m.__delitem__(0), m)[1], lambda m, T: (m.pop(-1), m)[1],
                 lambda m, T: (m.__delitem__(slice(1, 3)), m)[1], lambda m, T: m.append(T.nn.Linear(2, 2)),
                 lambda m, T: T.nn.ModuleList([T.nn.ReLU(), T.nn.ReLU(), T.nn.Tanh(), T.nn.ReLU()])]:
        _same(*_both(lambda T: edit(T.nn.ModuleList(_layers(T)), T)))
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got Linear"):
        scriptc.nn.ModuleList().extend(scriptc.nn.Linear(1, 1))


def test_module_dict():
    for build in [lambda T: T.nn.ModuleDict({"b": T.nn.ReLU(), "a": T.nn.Linear(2, 2)}),
                  lambda T: T.nn.ModuleDict([("x", T.nn.Tanh()), ("y", T.nn.ReLU())])]:
        _same(*_both(build))
    md = scriptc.nn.ModuleDict({"a": scriptc.nn.ReLU()})
    md["b"] = scriptc.nn.Tanh()
    md.update([("c", scriptc.nn.Sigmoid())])
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert isinstance(md.pop("a"), scriptc.nn.ReLU) and list(md.keys()) == ["b", "c"]
    md.clear()
    assert len(md) == 0
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("a",)])


def test_parameter_list_and_dict():
    for build in [lambda T: T.nn.ParameterList([T.nn.Parameter(T.ones(2, 3)), T.zeros(4)]),
                  lambda T: T.nn.ParameterList([T.ones(2)])[0:1],
                  lambda T: T.nn.ParameterDict({"b": T.nn.Parameter(T.ones(2)), "a": T.zeros(3, 1)}),
                  lambda T: T.nn.ParameterDict([("w", T.ones(2))])]:
        ours, theirs = _both(build)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert repr(ours) == repr(theirs)
    plist = scriptc.nn.ParameterList([scriptc.ones(2)])
    plist.append(scriptc.zeros(3))
    plist.extend([scriptc.ones(1)])
    assert len(plist) == 3 and all(isinstance(p, scriptc.nn.Parameter) for p in plist)
    assert len(list(plist.parameters())) == 3
    pdict = scriptc.nn.ParameterDict({"a": scriptc.ones(2)})
    pdict["b"] = scriptc.zeros(1)
    assert pdict.get("c") is None and pdict.setdefault("c", scriptc.ones(1)) is pdict["c"]
    assert list((pdict | scriptc.nn.ParameterDict({"z": scriptc.ones(1)})).keys()) == ["a", "b", "c", "z"]
    assert pdict.popitem()[0] == "c" and list(pdict) == ["a", "b"]
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        plist(1)
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pdict[3] = scriptc.ones(1)
