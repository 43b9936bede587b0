"""Interpreter, Transformer, subgraph_rewriter.replace_pattern and passes.shape_prop.ShapeProp."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc
from scriptc import fx
from scriptc.fx.passes.shape_prop import ShapeProp, TensorMetadata


class Model(scriptc.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = scriptc.nn.Linear(4, 6)

    def forward(self, x, bias):
        hidden = scriptc.relu(self.linear(x))
        left, right = hidden.split(3, dim=1)
        return scriptc.cat([left, right], 1).sigmoid() + bias, left.shape


def test_interpreter_runs_the_graph_like_the_module():
    model = Model()
    module = fx.symbolic_trace(model)
    x = scriptc.randn(2, 4)
    got, shape = fx.Interpreter(module).run(x, 0.5)
    want, want_shape = model(x, 0.5)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert shape == want_shape == (2, 3)


def test_overriding_one_node_kind_changes_what_runs():
    class NegatingRelu(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is scriptc.relu:
                return -super().call_function(target, args, kwargs)
            return super().call_function(target, args, kwargs)
    module = fx.symbolic_trace(lambda x: scriptc.relu(x) * 2)
    assert NegatingRelu(module).run(scriptc.tensor([1.0, -1.0])).tolist() == [-2.0, 0.0]


def test_interpreter_errors_name_the_node():
    module = fx.symbolic_trace(lambda x, y: scriptc.matmul(x, y))
    with pytest.raises(Exception, match=r"While executing %matmul : \[num_users=1\] = call_function"):
        fx.Interpreter(module).run(scriptc.ones(2, 3), scriptc.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y, but one was not passed in"):
        fx.Interpreter(module).run(scriptc.ones(2, 3))


def test_transformer_rewrites_calls_into_a_new_module():
    torch = pytest.importorskip("torch")

    def program(torch):
        class ReluToSigmoid(torch.fx.Transformer):
            def call_function(self, target, args, kwargs):
                if target is torch.relu:
                    target = torch.sigmoid
                return super().call_function(target, args, kwargs)

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(3, 3)

            def forward(self, x):
                return torch.relu(self.linear(x)).neg()
        return ReluToSigmoid(torch.fx.symbolic_trace(Net())).transform()
    ours, theirs = program(scriptc), program(torch)
    assert ours.code == theirs.code and str(ours.graph) == str(theirs.graph)
    x = scriptc.randn(2, 3)
    expected = -scriptc.sigmoid(ours.linear(x))
    np.testing.assert_allclose(ours(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6)


def test_replace_pattern_rewrites_every_occurrence():
    torch = pytest.importorskip("torch")

    def program(torch):
        def f(x, y):
            a = torch.add(x, y).relu()
            b = torch.add(a, x).relu()
            return torch.add(b, 1.0).relu() + a

        def pattern(x, y):
            return torch.add(x, y).relu()

        def replacement(x, y):
            return torch.sigmoid(torch.sub(x, y))
        module = torch.fx.symbolic_trace(f)
        matches = torch.fx.subgraph_rewriter.replace_pattern(module, pattern, replacement)
        return module, matches
    (ours, our_matches), (theirs, their_matches) = program(scriptc), program(torch)
    assert len(our_matches) == len(their_matches) == 3
    assert ours.code == theirs.code

    def names(match):
        return {p.name: str(g) for p, g in match.nodes_map.items()}
    assert [names(m) for m in our_matches] == [names(m) for m in their_matches]
    assert our_matches[2].anchor.name == "relu" and our_matches[2].nodes_map[our_matches[2].anchor].name == "relu_2"
    x, y = scriptc.randn(4), scriptc.randn(4)
    a = scriptc.sigmoid(x - y)
    b = scriptc.sigmoid(a - x)
    np.testing.assert_allclose(ours(x, y).numpy(), (scriptc.sigmoid(b - 1.0) + a).numpy(), rtol=1e-6)


def test_shape_prop_records_tensor_metadata():
    module = fx.symbolic_trace(Model())
    ShapeProp(module).propagate(scriptc.randn(5, 4), 1.0)
    meta = {n.name: n.meta.get("tensor_meta") for n in module.graph.nodes}
    assert isinstance(meta["linear"], TensorMetadata)
    assert tuple(meta["linear"].shape) == (5, 6) and meta["linear"].dtype == scriptc.float32
    assert meta["linear"].requires_grad and meta["linear"].stride == (6, 1)
    assert [tuple(m.shape) for m in meta["split"]] == [(5, 3), (5, 3)]
    assert meta["bias"] is None and meta["getattr_1"] is None
    assert next(n for n in module.graph.nodes if n.name == "getattr_1").meta["type"] is scriptc.Size


def test_transformer_overrides_may_call_torch_functions_on_proxies():
    class NegSigmoidSwap(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is scriptc.sigmoid:
                return scriptc.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                receiver, *rest = args
                return receiver.sigmoid(*rest, **kwargs)
            return super().call_method(target, args, kwargs)
    transformed = NegSigmoidSwap(fx.symbolic_trace(lambda x: scriptc.sigmoid(x).neg())).transform()
    assert "neg = torch.neg(x);  x = None\n    sigmoid = neg.sigmoid()" in transformed.code
    x = scriptc.randn(3)
    np.testing.assert_allclose(transformed(x).numpy(), scriptc.sigmoid(-x).numpy(), rtol=1e-6)
