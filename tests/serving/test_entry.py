"""What the server makes of an archive's signature: scripted archives, with and without example inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime import load
from scriptc.errors import ServeError
from scriptc.serving.batcher import run_batch
from scriptc.serving.protocol import decode, metadata, model_entry


class _Scripted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


def _body(shape, data):
    return json.dumps({"inputs": [{"name": "x", "shape": shape, "datatype": "FP32", "data": data}]}).encode()


@pytest.mark.parametrize("examples", [None, [(torch.randn(2, 4),)]])
def test_a_scripted_archive_serves_inputs_of_any_rank_its_signature_allows(examples, tmp_path):
    torch.manual_seed(0)
    module = _Scripted().eval()
    path = tmp_path / "scripted.sc"
    torch.jit.script(module, example_inputs=examples).save(str(path))
    entry = model_entry("scripted", load(str(path)))
    meta = metadata(entry)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    _, (decoded,) = decode(entry, _body([2, 4], x.ravel().tolist()), None)
    np.testing.assert_array_equal(decoded, x)
    if examples is None:
        # A plain `Tensor` argument: any shape goes, and nothing says rows are independent, so no stacking.
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1]}] and not entry.batchable
    else:
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
        assert meta["outputs"] == [{"name": "output0", "datatype": "FP32", "shape": [-1, 3]}] and entry.batchable
        with pytest.raises(ServeError, match=r"expected shape \[-1, 4\]"):
            decode(entry, _body([1, 5], list(range(5))), None)
    requests = [[x[:1]], [x[1:]]]
    for got, (request,) in zip(run_batch(entry, requests), requests):
        with torch.no_grad():
            np.testing.assert_allclose(got[0], module(torch.from_numpy(request)).numpy(), rtol=1e-6)


def test_a_traced_archive_stacks_requests_only_where_its_outputs_keep_the_batch_in_dim_0(tmp_path):
    def rows(x):  # 5 rows per example: dim 0 of the output is 5*B, not B
        return x.reshape(-1, 4) * 2

    def per_example(x):
        return x.reshape(x.size(0), -1) * 2

    def steps_first(x):  # the output's dim 0 is another dynamic dim (S1), not the batch
        return x.transpose(0, 1) * 2

    x = np.arange(40, dtype=np.float32).reshape(2, 5, 4)
    for fn, batchable in ((rows, False), (per_example, True), (steps_first, False)):
        path = tmp_path / f"{fn.__name__}.sc"
        torch.jit.trace(fn, torch.from_numpy(x)).save(str(path))
        entry = model_entry(fn.__name__, load(str(path)))
        assert entry.batchable == batchable
        requests = [[x[:1]], [x[1:]]]
        for got, (request,) in zip(run_batch(entry, requests), requests):
            np.testing.assert_array_equal(got[0], fn(torch.from_numpy(request)).numpy())
