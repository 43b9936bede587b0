"""Random fills in segment programs (lowerings/samplers.py, native/random.py): a random op between
products keeps the plan one program, and the program draws what eager code draws from the default
generator - the same numbers for the same seed, leaving the stream where eager code leaves it."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc as torch
from scriptc.codegen.llvm.driver import STATS
from scriptc.native.random import sampler_addresses
from scriptc.runtime.segments import SegmentStep

pytestmark = pytest.mark.skipif(sampler_addresses() is None, reason="numpy's samplers are not exported here")


class _Noisy(torch.nn.Module):
    """A VAE's reparameterization between two products, plus a uniform fill."""

    def __init__(self):
        super().__init__()
        self.encode = torch.nn.Linear(12, 6)
        self.decode = torch.nn.Linear(6, 5)

    def forward(self, x):
        h = torch.relu(self.encode(x))
        noise = torch.randn_like(h)
        scale = torch.rand_like(h)
        return self.decode(h + noise * scale), noise, scale


def _one_program(fast) -> SegmentStep:
    steps = fast._runner.steps
    assert len(steps) == 1 and isinstance(steps[0], SegmentStep)
    return steps[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_random_fill_keeps_one_program_drawing_the_eager_stream(dtype):
    torch.manual_seed(0)
    model = _Noisy().to(dtype).eval()
    example = torch.randn(4, 12, dtype=dtype)
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, (example,), check_trace=False), threads=1)
    segment = _one_program(fast)
    compiles = None
    with torch.no_grad():
        for call, batch in enumerate((4, 4, 1, 7, 300, 4)):
            if call == 2:
                compiles = STATS.compiles
            x = torch.from_numpy(np.random.default_rng(batch).standard_normal((batch, 12))).to(dtype)
            torch.manual_seed(batch)
            got, got_next = fast(x), torch.rand(3, dtype=torch.float64)
            torch.manual_seed(batch)
            expected, expected_next = model(x), torch.rand(3, dtype=torch.float64)
            for g, e in zip(got[1:], expected[1:]):  # the draws themselves: bit for bit
                assert g.dtype == e.dtype and g.shape == e.shape
                np.testing.assert_array_equal(g.numpy(), e.numpy())
            np.testing.assert_allclose(got[0].numpy(), expected[0].numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(got_next.numpy(), expected_next.numpy())  # the stream went on alike
    assert STATS.compiles == compiles  # new batch sizes compile nothing
    [program] = segment.programs.values()
    assert program is not None and program.draws, segment.reason


def test_consecutive_calls_draw_consecutive_numbers():
    torch.manual_seed(1)
    model = _Noisy().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, (torch.randn(3, 12),), check_trace=False),
                                            threads=1)
    x = torch.randn(5, 12)
    with torch.no_grad():
        fast(x)  # (the first call runs the steps and writes the program down)
        torch.manual_seed(7)
        draws = [fast(x)[1].numpy().copy() for _ in range(3)]
        torch.manual_seed(7)
        expected = [model(x)[1].numpy() for _ in range(3)]
    for got, want in zip(draws, expected):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(draws[0], draws[1])


def test_a_sized_fill_in_a_scripted_function_follows_the_batch():
    @torch.jit.script
    def jitter(x):
        return x + torch.randn(x.size(0), x.size(1))

    fast = torch.jit.optimize_for_inference(jitter, threads=1)
    for batch in (2, 2, 9, 1):
        x = torch.from_numpy(np.random.default_rng(batch).standard_normal((batch, 6)).astype(np.float32))
        torch.manual_seed(batch)
        got = fast(x)
        torch.manual_seed(batch)
        np.testing.assert_array_equal(got.numpy(), (x + torch.randn(batch, 6)).numpy())
    segment = _one_program(fast)
    assert any(p is not None and p.draws for p in segment.programs.values()), segment.reason


class _Tagged(torch.nn.Module):
    """A random fill, then an embedding whose index check could refuse the call after the fill drew."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(10, 4)
        self.mix = torch.nn.Linear(4, 4)

    def forward(self, tokens, x):
        noise = torch.randn_like(x)
        return self.mix(self.table(tokens) + x), noise


def test_a_fill_before_an_index_check_draws_once_per_call():
    torch.manual_seed(3)
    model = _Tagged().eval()
    tokens, x = torch.tensor([[1, 2], [3, 4]]), torch.randn(2, 2, 4)
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, (tokens, x), check_trace=False), threads=1)
    bad = torch.tensor([[1, 99], [3, 4]])
    with torch.no_grad():
        fast(tokens, x)
        for seed, given in ((0, tokens), (1, bad), (2, tokens)):
            streams = []
            for run in (fast, model):
                torch.manual_seed(seed)
                try:
                    drawn = run(given, x)[1].numpy()
                except (IndexError, RuntimeError):  # (eager's IndexError is a RuntimeError compiled)
                    drawn = None
                streams.append((drawn, torch.rand(2, dtype=torch.float64).numpy()))
            (got, after), (expected, expected_after) = streams
            assert (got is None) == (expected is None) == (given is bad)
            if got is not None:
                np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(after, expected_after)  # the stream moved on as eager's did
