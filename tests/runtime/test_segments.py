"""Segment programs (runtime/segments.py, native/program.py): straight-line runs of a plan as one native
call, for any batch size, against the reference interpreter."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import scriptc as torch
from scriptc.runtime.executor import Executor
from scriptc.runtime.groups import GroupStep
from scriptc.runtime.interpreter import Interpreter
from scriptc.runtime.segments import SegmentStep


def _plans(model, features: int, dtype=np.float32, script: bool = False):
    example = torch.from_numpy(np.ones((2, features), dtype=dtype))
    compiled = torch.jit.script(model.eval()) if script else torch.jit.trace(model.eval(), example)
    graph = torch.jit.optimize_for_inference(compiled, jit=False).graph
    return Executor(graph, threads=2), Interpreter(graph)


def _segments(executor) -> list[SegmentStep]:
    return [s for s in executor.steps if isinstance(s, SegmentStep)]


class _Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(24, 24)
        self.b = torch.nn.Linear(24, 24)

    def forward(self, x):
        h = torch.relu(self.a(x)) + x  # an epilogue reading the graph's input beside its head
        return torch.nn.functional.gelu(self.b(h)) * h


class _Gates(torch.nn.Module):
    """An LSTM cell's arithmetic: chunked gates (strided views), sizes and views in between."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.LSTMCell(24, 16)
        self.out = torch.nn.Linear(16, 24)

    def forward(self, x):
        h, c = self.cell(x)
        flat = h.view(h.size(0), -1)
        return self.out(torch.tanh(flat) * c).reshape(x.size(0), 2, 12).flatten(1) + x


@pytest.mark.parametrize("make, dtype, script", [
    (lambda: torch.nn.Sequential(torch.nn.Linear(40, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                 torch.nn.Tanh(), torch.nn.Linear(64, 7)), np.float32, False),
    (lambda: torch.nn.Sequential(torch.nn.Linear(40, 33), torch.nn.GELU(), torch.nn.Linear(33, 5),
                                 torch.nn.Softmax(dim=-1)), np.float64, True),
    (lambda: _Residual(), np.float32, True),
    (lambda: _Gates(), np.float32, False),
])
def test_one_program_runs_every_batch_size_with_the_references_results(make, dtype, script):
    torch.manual_seed(0)
    model = make().to(torch.float64) if dtype == np.float64 else make()
    features = 24 if isinstance(model, (_Residual, _Gates)) else 40
    executor, reference = _plans(model, features, dtype, script)
    [segment] = _segments(executor)
    assert len(executor.steps) == 1  # the whole plan is the one segment
    rng = np.random.default_rng(1)
    results = []
    for batch in (2, 1, 7, 64, 1, 3, 128, 2):
        x = rng.standard_normal((batch, features)).astype(dtype)
        (got,) = executor([x])
        (expected,) = reference.run([x])
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        results.append((got, got.copy()))
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason
    for got, copy in results:  # results the caller kept were never written over
        np.testing.assert_array_equal(got, copy)
    group_launches = sum(len(s._launches) for s in executor.group_steps)
    assert group_launches <= len(executor.group_steps)  # only the first call ran the steps


class _ActorCritic(torch.nn.Module):
    """pytorch/examples' actor-critic policy, called with one state: a vector, not rows."""

    def __init__(self):
        super().__init__()
        self.affine = torch.nn.Linear(4, 128)
        self.action = torch.nn.Linear(128, 2)
        self.value = torch.nn.Linear(128, 1)

    def forward(self, x):
        h = torch.relu(self.affine(x))
        return torch.softmax(self.action(h), dim=-1), self.value(h)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_of_a_vector_run_in_the_program(dtype):
    torch.manual_seed(0)
    model = _ActorCritic().eval()
    model = model.to(torch.float64) if dtype == np.float64 else model
    compiled = torch.jit.script(model)
    graph = torch.jit.optimize_for_inference(compiled, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal(4).astype(dtype)
        (got,), (expected,) = executor([x]), reference.run([x])
        for g, e in zip(got, expected):  # (the probabilities, the value)
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    [segment] = _segments(executor)
    assert segment.programs and all(segment.programs.values()), segment.reason


class _TransposedWeight(torch.nn.Module):
    """pytorch/examples' forward-forward layer: a product by a frozen weight transposed in the code."""

    def __init__(self, features: int, width: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(width, features))
        self.bias = torch.nn.Parameter(torch.randn(width))

    def forward(self, x):
        x = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return torch.relu(torch.mm(x, self.weight.T) + self.bias.unsqueeze(0)) + x @ self.weight.t()[:, :1]


@pytest.mark.parametrize("features, width", [(20, 16), (16, 16)])
def test_a_product_by_a_transposed_frozen_weight_runs_in_the_program(features, width):
    torch.manual_seed(0)
    model = _TransposedWeight(features, width).eval()
    executor, reference = _plans(model, features)
    assert "mm(" not in str(executor.graph)  # (canonicalize: a product of matrices is a matmul)
    rng = np.random.default_rng(3)
    for batch in (2, 1, 5, 64):
        x = rng.standard_normal((batch, features)).astype(np.float32)
        (got,), (expected,) = executor([x]), reference.run([x])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for segment in _segments(executor):
        assert segment.programs and all(segment.programs.values()), segment.reason
    assert sum(len(s._launches) for s in executor.group_steps) <= len(executor.group_steps)  # no call refused


class _Attention(torch.nn.Module):
    """Self-attention's two batched products, heads as a fourth dim or not."""

    def __init__(self, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (torch.nn.Linear(24, 24) for _ in range(3))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.heads:
            b, s = x.size(0), x.size(1)
            q, k, v = (t.view(b, s, self.heads, 24 // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.2, dim=-1)
        return torch.matmul(scores, v) + 1


@pytest.mark.parametrize("heads, dtype", [(0, np.float32), (4, np.float32), (3, np.float64)])
def test_batched_products_run_in_the_program(heads, dtype):
    torch.manual_seed(0)
    model = _Attention(heads).eval()
    model = model.to(torch.float64) if dtype == np.float64 else model
    example = torch.from_numpy(np.ones((2, 5, 24), dtype=dtype))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, example), jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(4)
    for batch in (2, 1, 7, 16):
        x = rng.standard_normal((batch, 5, 24)).astype(dtype)
        (got,), (expected,) = executor([x]), reference.run([x])
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for segment in _segments(executor):
        assert segment.programs and all(segment.programs.values()), segment.reason
    assert sum(len(s._launches) for s in executor.group_steps) <= len(executor.group_steps)  # no call refused


def test_a_batched_product_whose_batch_broadcasts_runs_the_steps():
    def scores(q, k):
        return torch.matmul(q, k) * 2
    q = torch.from_numpy(np.ones((3, 4, 5), np.float32))
    k = torch.from_numpy(np.ones((1, 5, 6), np.float32))
    graph = torch.jit.optimize_for_inference(torch.jit.trace(scores, (q, k)), jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((3, 4, 5)).astype(np.float32), rng.standard_normal((1, 5, 6)).astype(np.float32)]
    for _ in range(2):
        np.testing.assert_allclose(executor(args)[0], reference.run(args)[0], rtol=1e-6)


class _Heads(torch.nn.Module):
    """A pointwise group reading a view whose last dim is strided (a transposed product)."""

    def __init__(self):
        super().__init__()
        self.project = torch.nn.Linear(12, 12)

    def forward(self, x):
        heads = self.project(x).view(x.size(0), 3, 4).transpose(1, 2)
        return torch.nn.functional.leaky_relu(heads * 2 + 1, 0.2)


def test_a_group_reading_a_view_strided_in_its_last_dim_runs_in_the_program():
    torch.manual_seed(0)
    executor, reference = _plans(_Heads().eval(), 12)
    rng = np.random.default_rng(6)
    for batch in (2, 1, 9):
        x = rng.standard_normal((batch, 12)).astype(np.float32)
        (got,), (expected,) = executor([x]), reference.run([x])
        assert got.shape == expected.shape == (batch, 4, 3)
        # (the compiled GEMM and numpy's add the 12 products in their own orders: an ulp or so apart)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for segment in _segments(executor):
        assert segment.programs and all(segment.programs.values()), segment.reason
    assert sum(len(s._launches) for s in executor.group_steps) <= len(executor.group_steps)  # no call refused


def test_a_size_check_that_can_never_pass_makes_no_program():
    from scriptc.runtime.program_values import Builder, NotNative
    builder = Builder()
    builder.equal(builder.const(20), builder.const(20))
    with pytest.raises(NotNative, match="never match"):
        builder.equal(builder.const(20), builder.const(16))


def test_a_new_result_while_the_caller_holds_the_last_one_or_a_view_of_it():
    torch.manual_seed(1)
    executor, reference = _plans(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                                     torch.nn.Linear(16, 4)), 8)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(4)]
    executor([xs[0]])
    first = executor([xs[0]])[0]
    view = executor([xs[1]])[0][0]
    third = executor([xs[2]])[0]
    assert not np.shares_memory(first, third) and not np.shares_memory(view, third)
    for x, got in ((xs[0], first), (xs[1], view[None]), (xs[2], third)):
        np.testing.assert_allclose(got, reference.run([x])[0], rtol=1e-6, atol=1e-6)
    transposed = np.asfortranarray(rng.standard_normal((8, 1)).astype(np.float32)).T  # not C-contiguous: the steps
    np.testing.assert_allclose(executor([transposed])[0], reference.run([transposed])[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="same dtype"):  # as the reference: not the program's to run
        executor([xs[3].astype(np.float64)])


def test_a_call_the_program_refuses_runs_the_steps():
    # Built for x + b with b broadcast along rows; a call where x broadcasts instead gets the steps.
    def fn(x, b):
        return torch.tanh(x @ b) * 2.0 + x.sum(-1, keepdim=True)
    fn = torch.jit.script(fn)
    graph = torch.jit.optimize_for_inference(fn, jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    rng = np.random.default_rng(3)
    for x, b in [(rng.standard_normal((4, 5)), rng.standard_normal((5, 5))),
                 (rng.standard_normal((9, 5)), rng.standard_normal((5, 5))),
                 (rng.standard_normal((4, 3)), rng.standard_normal((3, 5)))]:  # a matmul that is not square
        np.testing.assert_allclose(executor([x, b])[0], reference.run([x, b])[0], rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError):
        executor([rng.standard_normal((4, 3)), rng.standard_normal((4, 5))])


def test_each_thread_has_its_own_frame_and_arenas():
    torch.manual_seed(2)
    executor, reference = _plans(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                                     torch.nn.Linear(32, 3)), 16)
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for i in range(200):
            x = rng.standard_normal((1 + i % 5, 16)).astype(np.float32)
            got = executor([x])[0].copy()
            if not np.allclose(got, reference.run([x])[0], rtol=1e-5, atol=1e-6):
                errors.append(seed)
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_segments_stop_at_what_the_program_cannot_run():
    torch.manual_seed(3)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(64, 2))

    def fn(x):
        return torch.cumsum(cnn(x), dim=-1) * 2.0  # a cumsum: no program runs one
    graph = torch.jit.optimize_for_inference(torch.jit.trace(fn, torch.randn(1, 3, 10, 10)), jit=False).graph
    executor = Executor(graph)
    assert [type(s) for s in executor.steps[:1] + executor.steps[-1:]] == [SegmentStep, SegmentStep]
    assert len(executor.steps) == 3 and not isinstance(executor.steps[1], (SegmentStep, GroupStep))
    for batch in (2, 5):
        x = np.random.default_rng(4).standard_normal((batch, 3, 10, 10)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], Interpreter(graph).run([x])[0], rtol=1e-5, atol=1e-6)
    assert all(s.programs and all(s.programs.values()) for s in _segments(executor))
    assert not _segments(Executor(graph, jit=False))


class _ConvNet(torch.nn.Module):
    """Every convolution a segment program runs (3x3, strided, 1x1, grouped, depthwise), pooling, a
    residual add, a concatenation."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.down = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.point = torch.nn.Conv2d(8, 16, 1)
        self.depth = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.side = torch.nn.Conv2d(8, 4, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = torch.nn.functional.max_pool2d(h, 2) + torch.relu(self.down(h))
        p = self.point(h)
        d = torch.clamp(self.bn(self.depth(p)), 0.0, 6.0) + p
        both = torch.cat([torch.nn.functional.avg_pool2d(d, 2), torch.nn.functional.avg_pool2d(self.side(h), 2)], 1)
        return torch.nn.functional.adaptive_avg_pool2d(both, 1).squeeze(3).squeeze(2)


@pytest.mark.parametrize("script", [False, True])
def test_a_convolutional_net_is_one_program_for_every_batch_size(script):
    torch.manual_seed(5)
    model = _ConvNet().eval()
    compiled = torch.jit.script(model) if script else torch.jit.trace(model, torch.randn(2, 3, 12, 12))
    graph = torch.jit.optimize_for_inference(compiled, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(6)
    for batch in (2, 1, 5, 3):
        x = rng.standard_normal((batch, 3, 12, 12)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-5)
    [segment] = executor.steps
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason
    # Another image size breaks what the program was built on (the convolutions' geometry): the steps run it.
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-5)


class _BandedNet(torch.nn.Module):
    """Convolutions whose columns a program makes a band of output rows at a time: 3x3 with a fused
    ReLU, 1x1 (its bands the image's own rows), grouped, strided, without a bias."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.point = torch.nn.Conv2d(8, 12, 1)
        self.grouped = torch.nn.Conv2d(12, 12, 3, padding=2, dilation=2, groups=2, bias=False)
        self.strided = torch.nn.Conv2d(12, 6, 3, stride=2)

    def forward(self, x):
        h = torch.relu(self.first(x))
        return self.strided(self.grouped(self.point(h)) + h.sum(1, keepdim=True))


def test_a_convolution_of_many_bands_equals_the_interpreter(monkeypatch):
    from scriptc.runtime import convolution_lowering, tap_products

    monkeypatch.setattr(convolution_lowering, "BAND_BYTES", 4096)  # 13 rows of 13: bands of 3 rows, then 1
    monkeypatch.setattr(tap_products, "TAP_WIDTH_RATIO", (0, 1))  # im2col's columns, not the taps
    assert convolution_lowering.bands(13, 3 * 9 * 13 * 4) == [(0, 3), (3, 6), (6, 9), (9, 12), (12, 13)]
    torch.manual_seed(9)
    traced = torch.jit.trace(_BandedNet().eval(), torch.randn(2, 3, 13, 13))
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(10)
    for batch in (2, 1, 5, 3):
        x = rng.standard_normal((batch, 3, 13, 13)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-4)
    [segment] = _segments(executor)
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("group_bytes", [40_000, 160_000])
def test_convolutions_of_images_side_by_side_equal_the_interpreter(monkeypatch, group_bytes):
    """Images a few at a time through one GEMM (small planes under big weights): batches that fill
    the last group and ones that do not, 1x1 (the images copied side by side), grouped, strided."""
    from scriptc.runtime import convolution_lowering

    monkeypatch.setattr(convolution_lowering, "WEIGHT_BYTES", 0)
    monkeypatch.setattr(convolution_lowering, "GROUP_BYTES", group_bytes)  # 2 to 10 images a group
    torch.manual_seed(11)
    traced = torch.jit.trace(_BandedNet().eval(), torch.randn(2, 3, 13, 13))
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    rng = np.random.default_rng(12)
    for batch in (2, 1, 5, 3, 7):
        x = rng.standard_normal((batch, 3, 13, 13)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-4, atol=1e-4)
    [segment] = _segments(executor)
    assert len(segment.programs) == 1 and all(segment.programs.values()), segment.reason


class _WordModel(torch.nn.Module):
    """An embedding, an LSTM and a decoder, returning the output and the LSTM's state (a tuple)."""

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Embedding(30, 8)
        self.rnn = torch.nn.LSTM(8, 12, 2)
        self.decoder = torch.nn.Linear(12, 30)

    def forward(self, tokens, h0, c0):
        output, hidden = self.rnn(self.encoder(tokens), (h0, c0))
        return torch.log_softmax(self.decoder(output), -1), hidden


def test_a_traced_lstm_language_model_is_one_program():
    torch.manual_seed(7)
    model = _WordModel().eval()
    rng = np.random.default_rng(8)

    def inputs():
        return [rng.integers(0, 30, (5, 3)), rng.standard_normal((2, 3, 12)).astype(np.float32),
                rng.standard_normal((2, 3, 12)).astype(np.float32)]
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, tuple(torch.from_numpy(a) for a in inputs())),
                                             jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    for _ in range(3):
        args = inputs()
        (got,), (expected,) = executor(args), reference.run(args)  # (output, (h, c)): tuples, as traced
        assert isinstance(got, tuple) and isinstance(got[1], tuple)
        for g, e in zip([got[0], *got[1]], [expected[0], *expected[1]]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    assert all(executor.steps[0].programs.values())
    args = inputs()
    args[0][1, 2] = 30  # a token outside the table: the steps raise the RuntimeError torch.jit raises
    with pytest.raises(RuntimeError, match="out of range"):
        executor(args)


def test_a_scripted_time_loop_runs_natively_and_a_loop_that_changes_shapes_does_not():
    from ..source_util import define
    rnn = torch.jit.script(define("""
    def rnn(x, w, u, h):
        for t in range(x.size(0)):
            h = torch.tanh(x[t] @ w + h @ u)
        for i in range(2):
            h = h * 0.5 + torch.relu(h)
        return h
    """))
    graph = torch.jit.optimize_for_inference(rnn, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(9)
    for steps, batch in [(4, 3), (0, 3), (1, 1), (50, 7)]:
        args = [rng.standard_normal((steps, batch, 5)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32),
                rng.standard_normal((6, 6)).astype(np.float32) * 0.3, rng.standard_normal((batch, 6)).astype(np.float32)]
        np.testing.assert_allclose(executor(args)[0], reference.run(args)[0], rtol=1e-5, atol=1e-5)
    assert all(executor.steps[0].programs.values())
    growing = torch.jit.script(define("""
    def grow(x, n: int):
        for i in range(n):
            x = torch.cat([x, x * 2.0], 0)
        return x
    """))
    graph = torch.jit.optimize_for_inference(growing, jit=False).graph
    executor = Executor(graph)
    for n in (0, 3, 3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_allclose(executor([x, n])[0], Interpreter(graph).run([x, n])[0], rtol=1e-6)
    assert not any(executor.steps[0].programs.values())  # (its carried tensor grows: the steps run it)


class _SequenceClassifier(torch.nn.Module):
    """pytorch/examples mnist_rnn's shape: a batch_first LSTM (transposes and a reshape of one), its last
    step (a select), BatchNorm1d (no conv to fold into), Dropout2d in eval, two Linears."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(input_size=6, hidden_size=8, batch_first=True)
        self.norm = torch.nn.BatchNorm1d(8)
        self.drop = torch.nn.Dropout2d(0.25)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        output, _ = self.rnn(x.reshape(-1, 5, 6))
        return torch.log_softmax(self.fc(self.drop(self.norm(output[:, -1, :]))), dim=1)


def test_a_batch_first_lstm_classifier_is_one_program():
    torch.manual_seed(10)
    model = _SequenceClassifier().eval()
    model.norm.running_mean = torch.randn(8)
    model.norm.running_var = torch.rand(8) + 0.5
    graph = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(4, 1, 5, 6)), jit=False).graph
    assert not [n for n in graph.block if n.op in ("batch_norm", "dropout2d")]  # an affine map; the identity
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(11)
    for batch in (4, 1, 9):
        x = rng.standard_normal((batch, 1, 5, 6)).astype(np.float32)
        np.testing.assert_allclose(executor([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
        with torch.no_grad():
            np.testing.assert_allclose(executor([x])[0], model(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)
    assert all(executor.steps[0].programs.values()), executor.steps[0].reason


def test_a_loop_over_a_stepped_range_counts_its_trips_natively():
    from ..source_util import define
    odd = torch.jit.script(define("""
    def odd(x, h):
        for t in range(1, x.size(0), 3):
            h = torch.tanh(x[t] + h)
        return h
    """))
    graph = torch.jit.optimize_for_inference(odd, jit=False).graph
    executor, reference = Executor(graph, threads=2), Interpreter(graph)
    assert [type(s) for s in executor.steps] == [SegmentStep]
    rng = np.random.default_rng(3)
    for steps in (0, 1, 2, 4, 5, 11):
        args = [rng.standard_normal((steps, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
        np.testing.assert_allclose(executor(args)[0], reference.run(args)[0], rtol=1e-6)


def test_a_group_reading_a_zero_dim_view_runs_in_the_program():
    # c[0, 0] is a 0-d view (a pointer with no strides) that the group reads as its condition.
    def fn(c, a, b):
        return torch.where(c[0, 0], a + b, a - b) * 2.0
    graph = torch.jit.optimize_for_inference(torch.jit.script(fn), jit=False).graph
    executor, reference = Executor(graph, threads=1), Interpreter(graph)
    rng = np.random.default_rng(7)
    for rows in (3, 1, 6):
        c = rng.random((rows, 5)) > 0.5
        a, b = (rng.standard_normal((rows, 5)).astype(np.float32) for _ in range(2))
        np.testing.assert_array_equal(executor([c, a, b])[0], reference.run([c, a, b])[0])
    [segment] = _segments(executor)
    assert segment.programs and all(segment.programs.values()), segment.reason


@pytest.mark.parametrize("kernel, dilation", [(2, 1), (4, 1), (2, 3), (3, 2)])
def test_a_same_padded_convolution_of_any_reach_keeps_the_image_size(kernel, dilation):
    # An even reach pads one more after than before: the program leaves that to the op, which pads first.
    torch.manual_seed(8)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, kernel, padding="same", dilation=dilation),
                                torch.nn.ReLU()).eval()
    graph = torch.jit.optimize_for_inference(torch.jit.script(model), jit=False).graph
    executor = Executor(graph, threads=1)
    rng = np.random.default_rng(9)
    for batch in (2, 3):
        x = rng.standard_normal((batch, 3, 9, 9)).astype(np.float32)
        (got,) = executor([x])
        expected = model(torch.from_numpy(x)).detach().numpy()
        assert got.shape == expected.shape == (batch, 4, 9, 9)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
