"""torch.ops.aten: the op table by ATen name, eagerly and in scripted code, against torch 2.13."""

import numpy as np
import pytest

import scriptc

torch = pytest.importorskip("torch")


def _index_put(engine, overload: bool):
    source, index, values = engine.zeros(6), engine.tensor([0, 2, 2, 5]), engine.tensor([1.0, 2.0, 3.0, 4.0])
    op = engine.ops.aten.index_put.hacked_twin if overload else engine.ops.aten._unsafe_index_put
    return op(source, [index], values, accumulate=True)


@pytest.mark.parametrize("overload", [True, False])
def test_ops_called_by_aten_name_match_torch(overload):
    np.testing.assert_allclose(_index_put(scriptc, overload).numpy(), _index_put(torch, overload).numpy())
    x = scriptc.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert scriptc.ops.aten.relu.default(x).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert scriptc.ops.aten.add.Tensor(x, x).tolist() == (x + x).tolist()


def _scripted_index_put(source, index, values):
    return scriptc.ops.aten._unsafe_index_put(source, [index], values, accumulate=False)


def test_aten_ops_in_scripted_code_include_method_only_ones():
    scripted = scriptc.jit.script(_scripted_index_put)
    source, index, values = scriptc.zeros(4), scriptc.tensor([3, 1]), scriptc.tensor([5.0, 6.0])
    assert scripted(source, index, values).tolist() == [0.0, 6.0, 0.0, 5.0]


def test_an_unknown_aten_name_is_torchs_attribute_error():
    for engine in (scriptc, torch):
        with pytest.raises(AttributeError, match="'_OpNamespace' 'aten' object has no attribute 'no_such_op'"):
            _ = engine.ops.aten.no_such_op
