"""jit.trace's dynamic dim (jit/trace_dims.py): the dim a trace really generalizes in is its batch
"B" - a reshape keeps the link to it, a split, unbind or size comparison that depends on a dim
fixes that dim - and a loaded model primes, and runs new sizes of that dim without compiling,
equal to eager."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.codegen.llvm.driver import STATS
from scriptc.runtime import load as runtime_load
from scriptc.runtime import model as model_module
from scriptc.runtime.segments import SegmentStep


class _WordLM(torch.nn.Module):
    """pytorch/examples word_language_model's RNNModel (smaller): tokens sequence-first (T, N)."""

    def __init__(self, tokens: int = 20, width: int = 8, hidden: int = 6):
        super().__init__()
        self.tokens = tokens
        self.encoder = torch.nn.Embedding(tokens, width)
        self.rnn = torch.nn.LSTM(width, hidden, 2)
        self.decoder = torch.nn.Linear(hidden, tokens)

    def forward(self, input, h0, c0):
        output, (h, c) = self.rnn(self.encoder(input), (h0, c0))
        decoded = self.decoder(output).view(-1, self.tokens)
        return torch.nn.functional.log_softmax(decoded, dim=1), h, c


def _word_lm_inputs(rng, steps: int, batch: int) -> list:
    return [rng.integers(0, 20, (steps, batch)), rng.standard_normal((2, batch, 6)).astype(np.float32),
            rng.standard_normal((2, batch, 6)).astype(np.float32)]


def _eager(model, arrays) -> list:
    with torch.no_grad():
        return [t.numpy() for t in model(*[torch.from_numpy(a) for a in arrays])]


def _input_types(traced) -> str:
    return str(traced.graph).splitlines()[0]


def test_a_sequence_first_lstm_is_dynamic_in_its_batch_not_its_steps():
    torch.manual_seed(0)
    model = _WordLM().eval()
    rng = np.random.default_rng(0)
    traced = torch.jit.trace(model, tuple(torch.from_numpy(a) for a in _word_lm_inputs(rng, 5, 3)))
    # The LSTM reshapes (5, 3, 8) to 15 rows and splits them into steps of 3: dim 0 cannot move.
    assert "%input : Tensor(int64, [5, B]), %h0 : Tensor(float32, [2, B, 6]), %c0 : Tensor(float32, [2, B, 6])" \
        in _input_types(traced)
    text = str(traced.graph)
    assert "Tensor(float32, [?, 8]) = reshape(" in text  # 5*B rows: linked to B, not the observed 15
    assert "Tensor(float32, [B, 24]), " in text  # each step's gates
    for batch in (3, 1, 7):
        arrays = _word_lm_inputs(rng, 5, batch)
        for got, want in zip(traced(*[torch.from_numpy(a) for a in arrays]), _eager(model, arrays)):
            np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_loaded_sequence_first_lstm_primes_and_compiles_nothing_for_new_batches(tmp_path, monkeypatch):
    torch.manual_seed(1)
    model = _WordLM().eval()
    rng = np.random.default_rng(1)
    path = str(tmp_path / "lm.sc")
    torch.jit.save(torch.jit.trace(model, tuple(torch.from_numpy(a) for a in _word_lm_inputs(rng, 5, 3))), path)
    primed = []
    real = model_module.RuntimeModel._prime_call
    monkeypatch.setattr(model_module.RuntimeModel, "_prime_call",
                        lambda self, name, inputs: primed.append((inputs[0].shape, real(self, name, inputs)))
                        or primed[-1][1])
    loaded = runtime_load(path)
    # Zeros at batch 2 and 1 of the token columns, every call accepted.
    assert primed and all(ok for _, ok in primed)
    assert {shape for shape, _ in primed} >= {(5, 2), (5, 1)}
    compiles, steps = STATS.compiles, []
    run_steps = SegmentStep.run_steps
    monkeypatch.setattr(SegmentStep, "run_steps", lambda self, frame: (steps.append(1), run_steps(self, frame)))
    for batch in (3, 4, 1, 9):
        arrays = _word_lm_inputs(rng, 5, batch)
        for got, want in zip(loaded(*arrays), _eager(model, arrays)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert STATS.compiles == compiles and not steps  # (no kernel built, every call ran the programs)


def test_a_reshape_keeps_the_batch_and_flattening_it_away_leaves_the_rows_unknown():
    def rows(x):
        flat = x.reshape(x.size(0) * x.size(1), x.size(2))
        return flat.sum(1), flat.view(x.size(0), -1), x.reshape(-1, 4) * 2

    traced = torch.jit.trace(rows, torch.randn(3, 5, 4))
    text = str(traced.graph)
    assert "%x : Tensor(float32, [B, 5, 4])" in text
    assert "Tensor(float32, [B, 20]) = view(" in text and "Tensor(float32, [?, 4]) = reshape(" in text
    for batch in (3, 1, 6):
        x = torch.randn(batch, 5, 4)
        for got, want in zip(traced(x), rows(x)):
            np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    fast = torch.jit.optimize_for_inference(traced)
    x = torch.randn(11, 5, 4)
    for got, want in zip(fast(x), rows(x)):
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("split", [
    lambda x: x.unbind(0),
    lambda x: x.split(1, 0),
    lambda x: x.reshape(-1).split(x.size(1)),  # the rows of a flattened batch: the count is dim 0
    lambda x: x.chunk(x.size(0), 0),
])
def test_a_split_into_as_many_parts_as_a_dim_fixes_that_dim(split):
    def per_row(x):
        return torch.stack([part.reshape(-1) * (i + 1) for i, part in enumerate(split(x))])

    traced = torch.jit.trace(per_row, torch.randn(3, 4))
    assert "%x : Tensor(float32, [3, B])" in _input_types(traced)
    for width in (4, 1, 9):
        x = torch.randn(3, width)
        np.testing.assert_allclose(traced(x).detach().numpy(), per_row(x).numpy(), rtol=1e-6)


def test_a_chunk_into_a_fixed_count_keeps_the_batch():
    def gates(x):
        a, b = x.chunk(2, 1)
        return a.sigmoid() * b

    traced = torch.jit.trace(gates, torch.randn(3, 8))
    assert "%x : Tensor(float32, [B, 8])" in _input_types(traced)
    x = torch.randn(5, 8)
    np.testing.assert_allclose(traced(x).detach().numpy(), gates(x).numpy(), rtol=1e-6)


def test_a_size_compared_in_python_fixes_that_dim_and_no_dim_left_means_no_batch():
    def gated(x):
        return x * 2 if x.size(0) == 3 else x

    assert "%x : Tensor(float32, [3, B])" in _input_types(torch.jit.trace(gated, torch.randn(3, 4)))

    def every_row_and_column(x):
        return torch.stack([r.sum() for r in x.unbind(0)] + [c.sum() for c in x.unbind(1)])

    traced = torch.jit.trace(every_row_and_column, torch.randn(3, 4))
    text = str(traced.graph)
    assert "%x : Tensor(float32, [3, 4])" in text and "[B" not in text and ", B" not in text


def test_other_inputs_share_the_batch_at_its_index_where_their_size_matches():
    def mix(x, state, bias):
        first, second = x.unbind(0)
        return first + second + state[1], bias * 2

    traced = torch.jit.trace(mix, (torch.randn(2, 5, 3), torch.randn(2, 5, 3), torch.randn(5)))
    # dim 0 of x is unbound into 2 parts, so its dim 1 is the batch; bias has no dim 1
    assert "%x : Tensor(float32, [2, B, 3]), %state : Tensor(float32, [2, B, 3]), %bias : Tensor(float32, [5])" \
        in _input_types(traced)
    x, state, bias = torch.randn(2, 7, 3), torch.randn(2, 7, 3), torch.randn(5)
    for got, want in zip(traced(x, state, bias), mix(x, state, bias)):
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-6)


def test_a_rule_that_cannot_say_even_at_the_observed_sizes_drops_nothing(monkeypatch):
    from scriptc import ops

    def no_rule(*args):
        raise NotImplementedError("no shape rule")

    monkeypatch.setattr(ops.OPS["relu"], "shape", no_rule)

    def head(x):
        return x.relu().sum(1)

    traced = torch.jit.trace(head, torch.randn(3, 4))
    assert "%x : Tensor(float32, [B, 4])" in _input_types(traced)
    x = torch.randn(6, 4)
    np.testing.assert_allclose(traced(x).detach().numpy(), head(x).numpy(), rtol=1e-6)
