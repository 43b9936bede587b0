"""RNN, LSTM, GRU and their cells against torch: outputs, final states and every gradient, from copied weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scriptc

from .compare import assert_close, assert_same_error, compare_module, copy_weights

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _x(*shape):
    return rng.standard_normal(shape).astype(np.float32)


LAYERS = [
    ("LSTM", dict(input_size=4, hidden_size=5)),
    ("LSTM", dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True, batch_first=True, proj_size=3)),
    ("LSTM", dict(input_size=4, hidden_size=5, num_layers=2, bias=False, dropout=0.0)),
    ("GRU", dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True)),
    ("GRU", dict(input_size=4, hidden_size=3, batch_first=True, bias=False)),
    ("RNN", dict(input_size=4, hidden_size=5, nonlinearity="relu", num_layers=2)),
    ("RNN", dict(input_size=4, hidden_size=5, bidirectional=True, bias=False)),
]


def _states(kind, kw, batch):
    directions = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * directions
    h = _x(layers, batch, kw.get("proj_size") or kw["hidden_size"])
    if kind == "LSTM":
        return (h, _x(layers, batch, kw["hidden_size"]))
    return h


@pytest.mark.parametrize("kind, kw", LAYERS, ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_layer_matches_torch(kind, kw):
    shape = (3, 6, 4) if kw.get("batch_first") else (6, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: LSTM with projections is not supported with oneDNN
        compare_module(lambda T: getattr(T.nn, kind)(**kw), [_x(*shape)])
        compare_module(lambda T: getattr(T.nn, kind)(**kw), [_x(*shape), _states(kind, kw, 3)], modes=("train",))


@pytest.mark.parametrize("kind, kw", LAYERS[1::2], ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_scripted_layer_matches_torch(kind, kw):
    shape = (3, 6, 4) if kw.get("batch_first") else (6, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(torch.nn, kind)(**kw).eval()
    ours = getattr(scriptc.nn, kind)(**kw).eval()
    copy_weights(theirs, ours)
    scripted = scriptc.jit.script(ours)
    x, states = _x(*shape), _states(kind, kw, 3)
    for args in ([x], [x, states]):
        with torch.no_grad():
            expected = theirs(*_convert(torch.from_numpy, args))
        got = scripted(*_convert(scriptc.from_numpy, args))
        for mine, ref in zip(_flat(got), _flat(expected)):
            assert_close(mine, ref)


def _convert(from_numpy, values):
    return [tuple(map(from_numpy, v)) if isinstance(v, tuple) else from_numpy(v) for v in values]


def _flat(result):
    output, state = result
    return [output, *state] if isinstance(state, tuple) else [output, state]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_unbatched_input(kind):
    kw = dict(input_size=4, hidden_size=5, num_layers=2)
    states = _states(kind, kw, 1)
    unbatched = tuple(s[:, 0] for s in states) if kind == "LSTM" else states[:, 0]
    compare_module(lambda T: getattr(T.nn, kind)(**kw), [_x(6, 4), unbatched], modes=("eval",))


def _packed(lengths, batch_first=False, enforce_sorted=False):
    def build(T):
        data = T.tensor(_PADDED.transpose(1, 0, 2) if batch_first else _PADDED)
        return T.nn.utils.rnn.pack_padded_sequence(data, lengths, batch_first=batch_first,
                                                   enforce_sorted=enforce_sorted)
    return build


_PADDED = _x(6, 4, 4)


@pytest.mark.parametrize("kind, kw", [("LSTM", dict(input_size=4, hidden_size=5, num_layers=2, bidirectional=True)),
                                      ("GRU", dict(input_size=4, hidden_size=3, bidirectional=True)),
                                      ("RNN", dict(input_size=4, hidden_size=3))])
def test_packed_sequence_input_and_output(kind, kw):
    ours, theirs = compare_module(lambda T: getattr(T.nn, kind)(**kw),
                                  [_packed([3, 6, 1, 5]), _states(kind, kw, 4)], modes=("eval",))


def test_packed_output_unpads_like_torch():
    kw = dict(input_size=4, hidden_size=5, bidirectional=True)
    outs = []
    for T in (torch, scriptc):
        T.manual_seed(0)
        layer = T.nn.LSTM(**kw)
        if T is scriptc:
            layer.load_state_dict({k: v.detach().numpy() for k, v in outs[0][1].state_dict().items()})
        packed = _packed([3, 6, 1, 5])(T)
        out, _ = layer(packed)
        padded, lengths = T.nn.utils.rnn.pad_packed_sequence(out, total_length=7, padding_value=-1.0)
        outs.append((padded, layer, lengths))
    np.testing.assert_allclose(outs[1][0].detach().numpy(), outs[0][0].detach().numpy(), rtol=1e-5, atol=1e-5)
    assert outs[1][2].tolist() == outs[0][2].tolist()


CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False})]


@pytest.mark.parametrize("kind, extra", CELLS)
def test_cells_match_torch(kind, extra):
    def build(T):
        return getattr(T.nn, kind)(4, 5, **extra)
    h = _x(3, 5)
    state = (h, _x(3, 5)) if kind == "LSTMCell" else h
    compare_module(build, [_x(3, 4), state])
    compare_module(build, [_x(3, 4)], modes=("eval",))
    compare_module(build, [_x(4), tuple(s[0] for s in state) if kind == "LSTMCell" else h[0]], modes=("eval",))


def test_repr_and_state_dict_keys():
    for kw in [dict(), dict(proj_size=2, num_layers=2, bias=False, batch_first=True, dropout=0.5,
                            bidirectional=True)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs, ours = torch.nn.LSTM(4, 3, **kw), scriptc.nn.LSTM(4, 3, **kw)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [[p.shape for p in w] for w in ours.all_weights] == [[tuple(p.shape) for p in w]
                                                                     for w in theirs.all_weights]
    assert repr(scriptc.nn.RNN(4, 3, nonlinearity="relu")) == "RNN(4, 3)"
    assert repr(scriptc.nn.RNNCell(4, 3, bias=False, nonlinearity="relu")) == repr(
        torch.nn.RNNCell(4, 3, bias=False, nonlinearity="relu"))


def test_initialisation_is_uniform_in_one_over_sqrt_hidden():
    layer = scriptc.nn.GRU(8, 16, num_layers=2)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.2


def test_moving_weights_keeps_the_recurrence_reading_them():
    layer = scriptc.nn.LSTM(3, 4).double()
    out, _ = layer(scriptc.randn(5, 2, 3, dtype=scriptc.float64))
    assert out.dtype == scriptc.float64
    assert all(w.dtype == scriptc.float64 for w in layer._flat_weights)


def test_dropout_between_layers_only_in_training():
    layer = scriptc.nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = scriptc.randn(5, 2, 3)
    layer.eval()
    a, _ = layer(x)
    b, _ = layer(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    layer.train()
    c, _ = layer(x)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


@pytest.mark.parametrize("make, call, error, message", [
    (lambda T: T.nn.LSTM(4, 3), lambda T, m: m(T.zeros(5, 2, 6)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 4, got 6"),
    (lambda T: T.nn.LSTM(4, 3, 2), lambda T, m: m(T.zeros(5, 2, 4), (T.zeros(2, 3, 3), T.zeros(2, 2, 3))),
     RuntimeError, "Expected hidden[0] size (2, 2, 3), got [2, 3, 3]"),
    (lambda T: T.nn.GRU(4, 3), lambda T, m: m(T.zeros(5, 2, 4), T.zeros(2, 3)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda T: T.nn.GRU(4, 3), lambda T, m: m(T.zeros(5, 2, 4), T.zeros(1, 3, 3)), RuntimeError,
     "Expected hidden size (1, 2, 3), got [1, 3, 3]"),
    (lambda T: T.nn.GRU(4, 3), lambda T, m: m(T.zeros(5, 2, 4, 1)), ValueError,
     "GRU: Expected input to be 2D or 3D, got 4D instead"),
    (lambda T: T.nn.RNN(4, 3), lambda T, m: m(T.zeros(5, 2, 4, dtype=T.float64)), ValueError,
     "RNN input dtype"),
    (lambda T: T.nn.LSTMCell(4, 3), lambda T, m: m(T.zeros(2, 5)), RuntimeError,
     "input has inconsistent input_size: got 5 expected 4"),
    (lambda T: T.nn.LSTMCell(4, 3), lambda T, m: m(T.zeros(2, 4), (T.zeros(3, 3), T.zeros(3, 3))), RuntimeError,
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda T: T.nn.GRUCell(4, 3), lambda T, m: m(T.zeros(2, 4), T.zeros(2, 5)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 5, expected 3"),
    (lambda T: T.nn.RNNCell(4, 3, nonlinearity="foo"), lambda T, m: m(T.zeros(2, 4)), RuntimeError,
     "Unknown nonlinearity: foo"),
])
def test_errors_match_torch(make, call, error, message):
    assert_same_error(lambda T: call(T, make(T)), error, message)


@pytest.mark.parametrize("build, error, message", [
    (lambda T: T.nn.RNN(4, 3, nonlinearity="foo"), ValueError,
     "Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'."),
    (lambda T: T.nn.LSTM(4, 3, proj_size=3), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda T: T.nn.GRU(4, 3, proj_size=2), ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda T: T.nn.LSTM(4, 3, dropout=1.5), ValueError, "dropout should be a number in range [0, 1]"),
    (lambda T: T.nn.LSTM(0, 3), ValueError, "input_size must be greater than zero"),
    (lambda T: T.nn.LSTM(4, 3, num_layers=0), ValueError, "num_layers must be greater than zero"),
])
def test_constructor_errors_match_torch(build, error, message):
    assert_same_error(build, error, message)


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        scriptc.nn.LSTM(4, 3, dropout=0.2)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_one_step_sequences(kind):
    kw = dict(input_size=4, hidden_size=4, bidirectional=True)
    compare_module(lambda T: getattr(T.nn, kind)(**kw), [_x(1, 3, 4)], modes=("train",))
    compare_module(lambda T: getattr(T.nn, kind)(**kw), [_packed([1, 1, 1, 1])], modes=("eval",))


def _outside_fusion_groups(block):
    for node in block:
        yield node
        if node.op != "prim::FusionGroup":
            for inner in node.blocks:
                yield from _outside_fusion_groups(inner)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_an_optimized_traced_layer_loops_over_its_steps_in_fused_kernels(kind):
    # As torch records one op for the layer, the trace keeps its loop over the steps (so it runs at
    # any length): per layer one GEMM for every step's input projection, and in the loop the
    # recurrent GEMM (the step's projected rows added as its epilogue) and the cell's pointwise
    # kernel; no op of the cell runs unfused.
    steps, layers = 4, 2
    layer = getattr(scriptc.nn, kind)(3, 5, layers).eval()
    graph = scriptc.jit.optimize_for_inference(scriptc.jit.trace(layer, scriptc.randn(steps, 2, 3)), jit=False).graph
    nodes = list(_outside_fusion_groups(graph.block))
    assert sum(n.op == "prim::Loop" for n in nodes) == layers
    kinds = [n.attrs["kind"] for n in nodes if n.op == "prim::FusionGroup"]
    assert "pointwise" in kinds and kinds.count("epilogue") >= 2 * layers
    assert not [n for n in nodes if n.op in ("sigmoid", "tanh", "mul", "add", "linear", "matmul")]
