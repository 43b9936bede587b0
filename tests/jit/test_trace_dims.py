"""jit.trace's dynamic dims (jit/trace_dims.py): every input dim a trace really generalizes in is
symbolic - the first the batch "B", the others S1, S2, ...; a reshape keeps the link to them, a
split, unbind or size comparison that depends on a dim fixes that dim - and a loaded model primes,
and runs new sizes of those dims without compiling, equal to eager."""

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


def test_a_sequence_first_lstm_runs_at_other_lengths_and_its_batch_is_the_dim_its_inputs_share():
    torch.manual_seed(0)
    model = _WordLM().eval()
    rng = np.random.default_rng(0)
    traced = torch.jit.trace(model, tuple(torch.from_numpy(a) for a in _word_lm_inputs(rng, 5, 3)))
    # The LSTM loops over the steps (as torch's one op for the layer does): dim 0 moves too. The
    # batch B is dim 1 of the tokens, the dim the initial states share, not the first dynamic one.
    assert "%input : Tensor(int64, [S1, B]), %h0 : Tensor(float32, [2, B, 6]), %c0 : Tensor(float32, [2, B, 6])" \
        in _input_types(traced)
    assert traced.example_batch == 3 and traced.example_sizes == {"S1": 5}
    for steps, batch in ((5, 3), (8, 1), (2, 7)):
        arrays = _word_lm_inputs(rng, steps, batch)
        for got, want in zip(traced(*[torch.from_numpy(a) for a in arrays]), _eager(model, arrays)):
            np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_loaded_sequence_first_lstm_primes_and_compiles_nothing_for_new_batches_or_lengths(tmp_path, monkeypatch):
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
    for length, batch in ((5, 3), (5, 4), (9, 1), (3, 9)):
        arrays = _word_lm_inputs(rng, length, batch)
        for got, want in zip(loaded(*arrays), _eager(model, arrays)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert STATS.compiles == compiles and not steps  # (no kernel built, every call ran the programs)


def test_a_reshape_keeps_the_dims_and_flattening_them_away_leaves_the_rows_unknown():
    def rows(x):
        flat = x.reshape(x.size(0) * x.size(1), x.size(2))
        return flat.sum(1), flat.view(x.size(0), -1), x.reshape(-1, 4) * 2

    traced = torch.jit.trace(rows, torch.randn(3, 5, 4))
    text = str(traced.graph)
    assert "%x : Tensor(float32, [B, S1, S2])" in text
    assert "Tensor(float32, [?, S2]) = reshape(" in text  # B*S1 rows, the columns still S2
    assert "Tensor(float32, [B, ?]) = view(" in text and "Tensor(float32, [?, 4]) = reshape(" in text
    for shape in ((3, 5, 4), (1, 5, 4), (6, 2, 4), (2, 3, 8)):
        x = torch.randn(*shape)
        for got, want in zip(traced(x), rows(x)):
            np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    fast = torch.jit.optimize_for_inference(traced)
    x = torch.randn(11, 7, 8)
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


def test_a_chunk_into_a_fixed_count_keeps_the_dims():
    def gates(x):
        a, b = x.chunk(2, 1)
        return a.sigmoid() * b

    traced = torch.jit.trace(gates, torch.randn(3, 8))
    assert "%x : Tensor(float32, [B, S1])" in _input_types(traced)
    for shape in ((5, 8), (2, 12)):
        x = torch.randn(*shape)
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
    # dim 0 of x is unbound into 2 parts, so its dim 1 is the batch; bias's one dim moves on its own
    assert "%x : Tensor(float32, [2, B, S1]), %state : Tensor(float32, [2, B, S1]), " \
        "%bias : Tensor(float32, [S2])" in _input_types(traced)
    x, state, bias = torch.randn(2, 7, 4), torch.randn(2, 7, 4), torch.randn(6)
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
    assert "%x : Tensor(float32, [B, S1])" in _input_types(traced)
    x = torch.randn(6, 5)
    np.testing.assert_allclose(traced(x).detach().numpy(), head(x).numpy(), rtol=1e-6)


# --- several dynamic dims -------------------------------------------------------------------------

class _SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.conv2 = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = torch.nn.functional.relu(self.bn(self.conv1(x)))
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class _Attention(torch.nn.Module):
    """nanoGPT's causal self-attention: sizes read with x.size(), heads split with view."""

    def __init__(self, width: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        causal = torch.ones(t, t).tril().view(1, 1, t, t)
        scores = scores.masked_fill(causal == 0, float("-inf")).softmax(-1)
        return self.proj((scores @ v).transpose(1, 2).contiguous().view(b, t, c))


def _check_at_sizes(model, traced, shapes, tmp_path):
    """The trace, its optimized form and its archive through runtime.load equal eager at each shape,
    and the loaded model compiles nothing for shapes after the first."""
    fast = torch.jit.optimize_for_inference(traced)
    path = str(tmp_path / "model.sc")
    traced.save(path)
    loaded = runtime_load(path)
    compiles = None
    for shape in shapes:
        x = torch.randn(*shape)
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(traced(x).detach().numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fast(x).detach().numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(loaded(x.numpy()), want, rtol=1e-4, atol=1e-5)
        if compiles is None:
            compiles = STATS.compiles
    assert STATS.compiles == compiles


def test_a_cnn_runs_at_other_heights_widths_and_batches(tmp_path):
    torch.manual_seed(2)
    model = _SmallCNN().eval()
    traced = torch.jit.trace(model, torch.randn(2, 3, 16, 16))
    assert "%x : Tensor(float32, [B, 3, S1, S2])" in _input_types(traced)
    _check_at_sizes(model, traced, [(2, 3, 24, 32), (3, 3, 16, 16), (1, 3, 40, 12), (4, 3, 8, 8)], tmp_path)


@pytest.mark.parametrize("make", [_Attention, lambda: torch.nn.TransformerEncoderLayer(
    16, 2, 32, dropout=0.0, batch_first=True)])
def test_attention_runs_at_other_batches_and_sequence_lengths(make, tmp_path):
    torch.manual_seed(3)
    model = make().eval()
    traced = torch.jit.trace(model, torch.randn(2, 6, 16))
    assert "Tensor(float32, [B, S1, 16])" in _input_types(traced)
    _check_at_sizes(model, traced, [(3, 9, 16), (2, 6, 16), (1, 1, 16), (5, 4, 16)], tmp_path)


def test_slices_and_reshapes_follow_the_sizes_they_are_computed_from():
    def halves(x):
        n = x.size(1) // 2
        front, back = x[:, :n], x[:, n:2 * n]
        rows = x.reshape(-1, x.size(2))
        return front * back + rows.sum(0), x.view(x.size(0), -1).flatten(0)[: x.size(0) * 3]

    traced = torch.jit.trace(halves, torch.randn(2, 8, 4))
    assert "%x : Tensor(float32, [B, S1, S2])" in _input_types(traced)
    text = str(traced.graph)
    assert "floordiv" in text or "div" in text  # n is computed in the graph, not a constant 4
    for shape in ((2, 8, 4), (3, 10, 5), (1, 6, 2), (4, 7, 3)):
        x = torch.randn(*shape)
        for got, want in zip(traced(x), halves(x)):
            np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_dim_a_comparison_bakes_in_is_refused_by_the_loaded_model_naming_its_size_and_why(tmp_path):
    def gated(x):
        return x * 2 if x.size(2) == 4 else x

    traced = torch.jit.trace(gated, torch.randn(2, 3, 4))
    assert "%x : Tensor(float32, [B, S1, 4])" in _input_types(traced)
    path = str(tmp_path / "gated.sc")
    traced.save(path)
    loaded = runtime_load(path)
    np.testing.assert_allclose(loaded(np.ones((5, 7, 4), np.float32)), np.full((5, 7, 4), 2.0, np.float32))
    with pytest.raises(torch.SignatureError, match=r"input 'x' expects size 4 in dim 2, which the trace baked in "
                       r"\(a comparison of sizes at test_trace_dims.py:\d+"):
        loaded(np.ones((5, 7, 5), np.float32))


def test_the_trace_refuses_another_size_where_it_baked_one_in_naming_it_and_why():
    def per_step(x):
        return torch.stack([step * 2 for step in x.unbind(0)])

    traced = torch.jit.trace(per_step, torch.randn(3, 4))
    assert "%x : Tensor(float32, [3, B])" in _input_types(traced)
    x = torch.randn(3, 6)
    np.testing.assert_allclose(traced(x).numpy(), per_step(x).numpy())
    with pytest.raises(torch.SignatureError, match=r"per_step\(\): input 'x' expects size 3 in dim 0, which the "
                       r"trace baked in \(unbind, whose 3 results the trace unpacked at test_trace_dims.py:\d+"):
        traced(torch.randn(5, 4))

    class Gated(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.size(1) == 4 else x

    traced = torch.jit.trace(Gated(), torch.randn(2, 4))
    with pytest.raises(torch.SignatureError, match=r"size 4 in dim 1, which the trace baked in \(a comparison of "
                       r"sizes at test_trace_dims.py:\d+"):
        traced(torch.randn(2, 5))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # an op failing at a size: eager's own error
        torch.jit.trace(lambda x, y: x @ y, (torch.randn(2, 3), torch.randn(3, 2)))(torch.randn(2, 3),
                                                                                   torch.randn(4, 2))


class _Translation(torch.nn.Module):
    """A sequence-first translation model (pytorch/examples' language_translation, smaller):
    source and target lengths are separate dims, the target's causal mask sized by its length."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(30, 16)
        self.transformer = torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.0)
        self.out = torch.nn.Linear(16, 30)

    def forward(self, src, tgt):
        mask = self.transformer.generate_square_subsequent_mask(tgt.size(0))
        return self.out(self.transformer(self.embed(src), self.embed(tgt), tgt_mask=mask))


def test_a_sequence_first_translation_model_runs_at_other_source_and_target_lengths(tmp_path):
    torch.manual_seed(4)
    model = _Translation().eval()
    traced = torch.jit.trace(model, (torch.randint(0, 30, (7, 2)), torch.randint(0, 30, (5, 2))))
    assert "%src : Tensor(int64, [S1, B]), %tgt : Tensor(int64, [S2, B])" in _input_types(traced)
    path = str(tmp_path / "translation.sc")
    traced.save(path)
    loaded = runtime_load(path)
    for source, target, batch in ((9, 4, 3), (3, 8, 1), (7, 5, 2)):
        src, tgt = torch.randint(0, 30, (source, batch)), torch.randint(0, 30, (target, batch))
        with torch.no_grad():
            want = model(src, tgt).numpy()
        np.testing.assert_allclose(traced(src, tgt).detach().numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(loaded(src.numpy(), tgt.numpy()), want, rtol=1e-4, atol=1e-5)


def test_a_python_loop_over_a_dims_indices_bakes_that_dim_in():
    cell = torch.nn.LSTMCell(3, 4)

    def unrolled(x):  # (steps, batch, features): `range` hands the tracer plain ints
        h = c = torch.zeros(x.size(1), 4)
        outputs = []
        for t in range(x.size(0)):
            h, c = cell(x[t], (h, c))
            outputs.append(h)
        return torch.stack(outputs)

    traced = torch.jit.trace(unrolled, torch.randn(5, 2, 3))
    assert "%x : Tensor(float32, [5, B, 3])" in _input_types(traced)
    x = torch.randn(5, 6, 3)
    np.testing.assert_allclose(traced(x).detach().numpy(), unrolled(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(torch.SignatureError, match=r"expects size 5 in dim 0, which the trace baked in \(x\[i\] at "
                       r"each of its 5 indices, as a Python loop over the dim reads it at test_trace_dims.py:\d+"):
        traced(torch.randn(7, 2, 3))

    def first_row(x):  # one index of a dim is no loop: the dim stays dynamic
        return x[0] * 2
    assert "[B, S1]" in _input_types(torch.jit.trace(first_row, torch.randn(3, 4)))


@pytest.mark.parametrize("make, example, types", [
    (lambda: torch.nn.LayerNorm(16), (2, 5, 16), "[B, S1, 16]"),
    (lambda: torch.nn.BatchNorm1d(6).eval(), (4, 6), "[B, 6]"),
    (lambda: torch.nn.BatchNorm2d(6).eval(), (2, 6, 5, 7), "[B, 6, S1, S2]"),
    (lambda: torch.nn.GroupNorm(2, 6), (2, 6, 5, 7), "[B, 6, S1, S2]"),
    (lambda: torch.nn.Conv1d(4, 6, 3), (2, 4, 9), "[B, 4, S1]"),
    (lambda: torch.nn.ConvTranspose2d(4, 2, 4, 2, 1), (2, 4, 5, 5), "[B, 4, S1, S2]"),
    (lambda: torch.nn.PixelShuffle(2), (1, 4, 3, 4), "[B, S1, S2, S3]"),  # (any multiple of 4 channels)
])
def test_a_dim_a_layers_weights_fix_stays_concrete(make, example, types):
    torch.manual_seed(5)
    layer = make()
    traced = torch.jit.trace(layer, torch.randn(*example))
    assert f"%input : Tensor(float32, {types})" in _input_types(traced)
    dims = types.strip("[]").split(", ")
    x = torch.randn(*[n if d.isdigit() else n * 2 for n, d in zip(example, dims)])  # each symbol at another size
    np.testing.assert_allclose(traced(x).detach().numpy(), layer(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class _Classifier(torch.nn.Module):
    """A batch-first LSTM over a sequence, its last step classified."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def test_a_recurrent_layers_result_keeps_the_dims_it_follows(tmp_path):
    # The layer stays a scripted loop in the trace; run again at the probe sizes it tells how its
    # result moves: the classifier's logits are [B, 3], which a server can stack requests along.
    torch.manual_seed(6)
    model = _Classifier().eval()
    traced = torch.jit.trace(model, torch.randn(2, 5, 4))
    assert "%x : Tensor(float32, [B, S1, 4])" in _input_types(traced)
    assert [str(v.type) for v in traced.graph.outputs] == ["Tensor(float32, [B, 3])"]
    for shape in ((3, 9, 4), (1, 2, 4)):
        x = torch.randn(*shape)
        np.testing.assert_allclose(traced(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class _Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1.0)
        return x * 2


def test_a_scripted_call_that_writes_state_is_not_run_again_at_the_probe_sizes():
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.jit.script(_Counting())

        def forward(self, x):
            return self.inner(x) + 1

    model = Outer()
    traced = torch.jit.trace(model, torch.randn(2, 3), check_trace=False)
    assert float(model.inner.calls[0]) == 1.0  # (once, by the trace itself)
    x = torch.randn(4, 5)
    np.testing.assert_allclose(traced(x).numpy(), (x * 2 + 1).numpy())


def test_a_size_passed_to_scripted_code_in_a_trace_stays_linked_to_its_dim():
    @torch.jit.script
    def first_rows(x, n: int):
        return x[:n] * 2

    def halves(x):
        return first_rows(x, x.size(0) // 2)

    traced = torch.jit.trace(halves, torch.randn(6, 3))
    assert "%x : Tensor(float32, [B, S1])" in _input_types(traced)
    x = torch.randn(10, 4)
    np.testing.assert_allclose(traced(x).numpy(), halves(x).numpy())


class _UNet(torch.nn.Module):
    """Two poolings down, upsampled back up, concatenated with the skip connections: only sizes that
    divide by 4 run in eager code, which the probe sizes (2x and 3x the traced ones) keep."""

    def __init__(self):
        super().__init__()
        self.down1, self.down2 = torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.Conv2d(4, 8, 3, padding=1)
        self.up2, self.up1 = torch.nn.ConvTranspose2d(8, 4, 2, stride=2), torch.nn.ConvTranspose2d(12, 4, 2, stride=2)
        self.out = torch.nn.Conv2d(5, 1, 1)

    def forward(self, x):
        a = torch.relu(self.down1(x))
        b = torch.relu(self.down2(torch.nn.functional.max_pool2d(a, 2)))
        c = torch.nn.functional.max_pool2d(b, 2)
        up = torch.cat([self.up2(c), b], 1)
        return self.out(torch.cat([self.up1(up), x], 1))


def test_a_unet_runs_at_other_sizes_its_poolings_divide(tmp_path):
    torch.manual_seed(7)
    model = _UNet().eval()
    traced = torch.jit.trace(model, torch.randn(1, 1, 8, 12))
    assert "%x : Tensor(float32, [B, 1, S1, S2])" in _input_types(traced)
    _check_at_sizes(model, traced, [(2, 1, 16, 20), (1, 1, 4, 4), (3, 1, 12, 8)], tmp_path)



def _pad_to_stride(lib, x):
    """torchvision's GeneralizedRCNNTransform batching images while traced (`lib`: scriptc or torch): the
    padded size is computed as tensors from the image's sizes and given to F.pad, which reads each pad in
    the graph."""
    sizes = [lib.tensor(x.shape[2]), lib.tensor(x.shape[3])]
    padded = [(lib.ceil(s.to(lib.float32) / 16) * 16).to(lib.int64) for s in sizes]
    pads = [padded[0] - x.shape[2], padded[1] - x.shape[3]]
    return lib.nn.functional.pad(x, (0, pads[1], 0, pads[0]), value=1.0)


class _PadToStride(torch.nn.Module):
    def forward(self, x):
        return _pad_to_stride(torch, x)


def test_pads_computed_as_tensors_from_sizes_follow_the_sizes(tmp_path):
    model = _PadToStride()
    traced = torch.jit.trace(model, torch.randn(1, 2, 20, 30))
    assert "%x : Tensor(float32, [B, S1, S2, S3])" in _input_types(traced)
    _check_at_sizes(model, traced, [(1, 2, 20, 30), (2, 2, 40, 17), (1, 2, 33, 64)], tmp_path)


def test_pads_from_sizes_trace_as_torchs_do():
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, other = (rng.standard_normal(shape).astype(np.float32) for shape in ((1, 2, 20, 30), (1, 2, 37, 5)))
    ours = torch.jit.trace(_PadToStride(), torch.from_numpy(x))
    theirs = real.jit.trace(lambda x: _pad_to_stride(real, x), real.from_numpy(x))
    np.testing.assert_array_equal(ours(torch.from_numpy(other)).numpy(), theirs(real.from_numpy(other)).numpy())


def test_a_size_computed_as_a_tensor_shapes_a_view_in_the_graph():
    def halves(x):
        return x.view(torch.tensor(x.shape[0]) // 2, -1)

    traced = torch.jit.trace(halves, torch.randn(6, 3))
    np.testing.assert_allclose(traced(torch.ones(10, 4)).numpy(), np.ones((5, 8)))


class _ResizeShorterSide(torch.nn.Module):
    """torchvision's detection transform resizing while traced: the scale that brings the shorter side to
    16 is computed as a tensor from the image's sizes, and interpolate takes it. Probes scaling one side
    at a time change the aspect, so the output's dims move with both (unknown to the graph)."""

    def forward(self, x):
        sides = torch.onnx.operators.shape_as_tensor(x)[-2:].to(torch.float32)
        scale = 16 / torch.min(sides)
        return torch.nn.functional.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False,
                                               recompute_scale_factor=True)


def test_an_interpolation_to_a_size_computed_from_the_inputs_sizes_follows_them(tmp_path):
    model = _ResizeShorterSide()
    traced = torch.jit.trace(model, torch.randn(1, 2, 20, 30))
    assert "Tensor(float32, [B, S1, ?, ?]) = interpolate.size_tensor" in str(traced.graph)
    _check_at_sizes(model, traced, [(1, 2, 20, 30), (2, 2, 24, 12), (1, 2, 40, 40)], tmp_path)
