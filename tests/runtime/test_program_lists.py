"""Lists in segment programs (runtime/lowerings/lists.py): a scripted recurrence's split input read by
the loop counter and its list of outputs, its argument checks on run-time sizes - one program for
every sequence length and batch size, against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.codegen.llvm.driver import STATS
from scriptc.runtime.executor import Executor
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


class _Sequence(torch.nn.Module):
    """pytorch/examples time_sequence_prediction's Sequence (smaller): two LSTMCells over the input's
    columns, a Linear per step, the outputs appended to a list and joined."""

    def __init__(self, hidden: int = 6):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = torch.nn.LSTMCell(1, hidden)
        self.lstm2 = torch.nn.LSTMCell(hidden, hidden)
        self.linear = torch.nn.Linear(hidden, 1)

    def forward(self, input):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            outputs += [self.linear(h_t2)]
        return torch.cat(outputs, dim=1)


def _plan(fn):
    graph = torch.jit.optimize_for_inference(fn, jit=False).graph
    return Executor(graph, threads=1), Interpreter(graph)


def _count_steps(monkeypatch) -> list:
    """A list that grows by one each time a segment runs its steps instead of its program."""
    calls = []
    run_steps = SegmentStep.run_steps
    monkeypatch.setattr(SegmentStep, "run_steps", lambda self, frame: (calls.append(1), run_steps(self, frame)))
    return calls


def test_a_scripted_lstm_cell_loop_is_one_program_for_every_length_and_batch(monkeypatch):
    torch.manual_seed(3)
    model = _Sequence().double().eval()
    executor, reference = _plan(torch.jit.script(model))
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 100))
    np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-12, atol=1e-12)
    programs = executor.steps[0].programs
    assert programs and all(programs.values()), executor.steps[0].reason
    compiles, steps = STATS.compiles, _count_steps(monkeypatch)
    for batch, length in [(1, 1), (3, 2), (13, 7), (2, 200), (5, 37), (1, 150)]:
        x = rng.standard_normal((batch, length))
        got = executor([x])[0]
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-12, atol=1e-12)
        with torch.no_grad():
            np.testing.assert_allclose(got, model(torch.from_numpy(x)).numpy(), rtol=1e-12, atol=1e-12)
    assert STATS.compiles == compiles and not steps  # (no new kernel, and the program ran every call)


def test_the_argument_checks_refuse_the_call_and_the_steps_raise_torchs_error():
    torch.manual_seed(5)
    cell = torch.nn.LSTMCell(3, 4).eval()
    executor, reference = _plan(torch.jit.script(cell))
    rng = np.random.default_rng(6)
    x, h, c = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3), (2, 4), (2, 4)])
    for got, expected in zip(executor([x, (h, c)])[0], reference.run([x, (h, c)])[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    segment = next(s for s in executor.steps if isinstance(s, SegmentStep))
    assert all(segment.programs.values()), segment.reason
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        executor([rng.standard_normal((2, 5)).astype(np.float32), (h, c)])
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 3, expected 4"):
        executor([x, (h[:, :3].copy(), c)])
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        executor([rng.standard_normal((3, 3)).astype(np.float32), (h, c)])


@pytest.mark.parametrize("join, dim", [("cat", 0), ("cat", 1), ("cat", -1), ("stack", 0), ("stack", 1),
                                       ("stack", 2)])
def test_a_loops_list_of_outputs_joins_along_any_dim(join, dim):
    from ..source_util import define
    fn = torch.jit.script(define(f"""
    def walk(x, h):
        outs: List[Tensor] = []
        for x_t in x.split(2, dim=0):
            h = torch.tanh(x_t.sum(0) + h)
            outs.append(h * 2.0)
        return torch.{join}(outs, {dim})
    """))
    executor, reference = _plan(fn)
    rng = np.random.default_rng(7)
    for steps, width in [(3, 4), (1, 4), (9, 2)]:
        args = [rng.standard_normal((2 * steps, 3, width)).astype(np.float32),
                rng.standard_normal((3, width)).astype(np.float32)]
        np.testing.assert_allclose(executor(args)[0], reference.run(args)[0], rtol=1e-6, atol=1e-6)
    assert all(s.programs and all(s.programs.values()) for s in executor.steps if isinstance(s, SegmentStep))


def test_pieces_that_do_not_fill_the_dim_and_an_empty_list_run_the_steps():
    from ..source_util import define
    fn = torch.jit.script(define("""
    def walk(x):
        outs: List[Tensor] = []
        for x_t in x.split(2, dim=1):
            outs.append(torch.relu(x_t) + 1.0)
        return torch.cat(outs, 1)
    """))
    executor, reference = _plan(fn)
    rng = np.random.default_rng(8)
    for width in (4, 5, 1, 6):  # (5 and 1 leave a short last piece: the program refuses those calls)
        x = rng.standard_normal((3, width)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-6)
    x = np.zeros((3, 0), np.float32)  # (one empty piece, as torch splits an empty dim)
    assert executor([x])[0].shape == reference.run([x])[0].shape == (3, 0)


class _WordModel(torch.nn.Module):
    """pytorch/examples word_language_model's RNNModel (small): embedding, a 2-layer LSTM, dropout
    out of training, a decoder and log_softmax."""

    def __init__(self, kind: str = "LSTM"):
        super().__init__()
        self.encoder = torch.nn.Embedding(30, 6)
        self.rnn = getattr(torch.nn, kind)(6, 5, 2, dropout=0.2)
        self.drop = torch.nn.Dropout(0.2)
        self.decoder = torch.nn.Linear(5, 30)

    def decoded(self, output):
        return torch.nn.functional.log_softmax(self.decoder(self.drop(output)).view(-1, 30), dim=1)

    def forward(self, input, h0, c0):
        output, hidden = self.rnn(self.drop(self.encoder(input)), (h0, c0))
        return self.decoded(output), hidden[0], hidden[1]


class _WordModelGRU(_WordModel):
    def __init__(self):
        super().__init__("GRU")

    def forward(self, input, h0):
        output, hidden = self.rnn(self.drop(self.encoder(input)), h0)
        return self.decoded(output), hidden


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_a_scripted_recurrent_language_model_is_one_program_for_every_length_and_batch(kind, monkeypatch):
    torch.manual_seed(9)
    model = (_WordModel() if kind == "LSTM" else _WordModelGRU()).eval()
    executor, reference = _plan(torch.jit.script(model))
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(10)

    def inputs(steps, batch):
        state = [rng.standard_normal((2, batch, 5)).astype(np.float32) for _ in range(2 if kind == "LSTM" else 1)]
        return [rng.integers(0, 30, (steps, batch))] + state

    def same(got, expected):
        for g, e in zip(_flat(got), _flat(expected), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    args = inputs(35, 4)
    same(executor(args), reference.run(args))
    programs = executor.steps[0].programs
    assert programs and all(programs.values()), executor.steps[0].reason
    compiles, steps = STATS.compiles, _count_steps(monkeypatch)
    for length, batch in [(1, 1), (2, 7), (200, 3), (17, 1)]:
        args = inputs(length, batch)
        same(executor(args), reference.run(args))
    assert STATS.compiles == compiles and not steps


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


def test_a_view_that_grows_with_the_loop_counter_runs_the_steps():
    from ..source_util import define
    fn = torch.jit.script(define("""
    def prefix_sums(x):
        outs: List[Tensor] = []
        for t in range(x.size(0)):
            outs.append(torch.tanh(x.narrow(0, 0, t + 1)).sum(0))
        return torch.stack(outs, 0)
    """))
    executor, reference = _plan(fn)
    rng = np.random.default_rng(11)
    for steps in (3, 1, 6):
        x = rng.standard_normal((steps, 4)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-6)
    assert not any(p for s in executor.steps if isinstance(s, SegmentStep) for p in s.programs.values())


class _TupleState(torch.nn.Module):
    """word_language_model's call shape: the hidden state passed (and returned) as one (h, c) tuple."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 5, 2)

    def forward(self, x, hidden):
        output, hidden = self.rnn(x, hidden)
        return torch.relu(output), hidden


def test_a_tuple_input_is_read_item_by_item_by_the_program(monkeypatch):
    torch.manual_seed(12)
    model = _TupleState().eval()
    rng = np.random.default_rng(13)

    def inputs(steps, batch):
        return [rng.standard_normal((steps, batch, 4)).astype(np.float32),
                tuple(rng.standard_normal((2, batch, 5)).astype(np.float32) for _ in range(2))]
    example = inputs(3, 2)
    traced = torch.jit.trace(model, (torch.from_numpy(example[0]), tuple(torch.from_numpy(a) for a in example[1])))
    executor, reference = _plan(traced)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    for got, expected in zip(_flat(executor(example)), _flat(reference.run(example)), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    programs = executor.steps[0].programs
    assert programs and all(programs.values()), executor.steps[0].reason
    steps = _count_steps(monkeypatch)
    for _ in range(2):  # (a trace unrolls its steps and bakes its batch in: new values, one shape)
        args = inputs(3, 2)
        for got, expected in zip(_flat(executor(args)), _flat(reference.run(args)), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert not steps
