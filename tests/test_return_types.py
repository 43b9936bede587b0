"""torch.return_types: one named tuple class per op, shared by its overloads, as torch has them."""

import pickle

import pytest

import scriptc

torch = pytest.importorskip("torch")


def test_results_are_the_shared_return_type():
    x = scriptc.tensor([[3.0, 1.0], [2.0, 4.0]])
    for result, name in ((x.max(0), "max"), (scriptc.max(x, dim=1), "max"), (x.sort(), "sort"),
                         (x.topk(1), "topk"), (x.aminmax(), "aminmax"), (scriptc.linalg.qr(x), "linalg_qr")):
        assert isinstance(result, getattr(scriptc.return_types, name))
    values, indices = x.min(1)
    assert x.min(1).indices.tolist() == indices.tolist() == [1, 0]


def test_fields_match_torch():
    for name in ("max", "min", "sort", "topk", "kthvalue", "median", "mode", "cummax", "aminmax", "frexp",
                 "slogdet", "linalg_slogdet", "linalg_eigh", "linalg_svd", "svd", "qr", "histogram", "lu_unpack"):
        ours = getattr(scriptc.return_types, name)
        theirs = getattr(torch.return_types, name)
        assert ours.n_fields == theirs.n_fields
        sample = theirs(tuple(range(theirs.n_fields)))
        assert [getattr(sample, field) for field in ours._fields] == list(range(theirs.n_fields))


def test_repr_and_pickle():
    result = scriptc.tensor([1.0, 5.0]).max(0)
    assert repr(result) == "torch.return_types.max(\nvalues=tensor(5.),\nindices=tensor(1))"
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is scriptc.return_types.max and again.indices.item() == 1


def test_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'not_an_op'"):
        _ = scriptc.return_types.not_an_op
