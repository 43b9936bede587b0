"""Generic plans: scripted code with no example inputs fuses, and each group compiles on its first call
for the signature it sees (dtype, rank, broadcast dims) - then no new size compiles anything, in this
process or the next - and the results equal the reference interpreter's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import scriptc as torch
from scriptc.codegen.llvm.driver import STATS
from scriptc.runtime import Interpreter

from ..source_util import define

GELU = """
def gelu_chain(x, w, b):
    y = x * w + b
    return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
"""


class LinearEpilogue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(12, 24)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        return y * 2.0 + x.sum(-1, keepdim=True)


class Sequence(torch.nn.Module):
    """(batch, time, features) through a layer_norm, a linear and a softmax over time."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.tanh(self.fc(self.norm(x))) * 0.5
        return torch.softmax(h, 1) + h


class SqueezeExcitation(torch.nn.Module):
    """torchvision's: a scale from the pooled input through two 1x1 convolutions, times the input."""

    def __init__(self, channels: int = 8, squeezed: int = 4):
        super().__init__()
        self.fc1 = torch.nn.Conv2d(channels, squeezed, 1)
        self.fc2 = torch.nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        scale = torch.relu(self.fc1(torch.nn.functional.adaptive_avg_pool2d(x, 1)))
        return torch.nn.functional.hardsigmoid(self.fc2(scale)) * x


def _groups(graph):
    return [n for n in graph.nodes() if n.op == "prim::FusionGroup"]


def _kernels(fast) -> int:
    """How many kernels (one per signature) the optimized module's groups have compiled."""
    return sum(len(step.variants) for step in fast._runner.group_steps)


def _same(got, expected, rtol=1e-5, atol=1e-5):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_a_scripted_chain_without_example_inputs_is_one_group_compiled_once_for_every_size():
    scripted = torch.jit.script(define(GELU))
    fast = torch.jit.optimize_for_inference(scripted)
    [group] = _groups(fast.graph)
    assert "guard" not in group.attrs  # no types to guard on: compiled at the first call
    rng = np.random.default_rng(0)
    w, b = (rng.standard_normal(1).astype(np.float32) for _ in range(2))
    fast(torch.from_numpy(rng.standard_normal(3).astype(np.float32)), torch.from_numpy(w), torch.from_numpy(b))
    assert _kernels(fast) == 1
    compiles = STATS.compiles
    for size in [1, 7, 1023, (1 << 20) + 3]:
        x = rng.standard_normal(size).astype(np.float32)
        got = fast(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)).numpy()
        _same(got, Interpreter(scripted.graph).run([x, w, b])[0])
    assert STATS.compiles == compiles and _kernels(fast) == 1


def test_a_scripted_module_fuses_its_epilogue_and_every_batch_size_runs_the_first_calls_kernels():
    model = LinearEpilogue().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.script(model))
    kinds = sorted(g.attrs["kind"] for g in _groups(fast.graph))
    assert kinds == ["epilogue", "reduction"]
    rng = np.random.default_rng(1)
    fast(torch.randn(4, 12))
    compiles, kernels = STATS.compiles, _kernels(fast)
    for batch in [1, 2, 3, 17, 64, 128]:
        x = torch.from_numpy(rng.standard_normal((batch, 12)).astype(np.float32))
        with torch.no_grad():
            _same(fast(x).numpy(), model(x).numpy())
    assert STATS.compiles == compiles and _kernels(fast) == kernels == 2


def test_sequence_lengths_and_a_new_dtype():
    model = Sequence().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.script(model))
    rng = np.random.default_rng(2)
    fast(torch.randn(2, 5, 8))
    compiles, kernels = STATS.compiles, _kernels(fast)
    for batch, time in [(1, 1), (3, 7), (2, 200), (8, 33)]:
        x = torch.from_numpy(rng.standard_normal((batch, time, 8)).astype(np.float32))
        with torch.no_grad():
            _same(fast(x).numpy(), model(x).numpy())
    assert STATS.compiles == compiles and _kernels(fast) == kernels
    # float64 is another signature: its kernels are compiled at its first call, and it runs them.
    model64 = Sequence().double().eval()
    fast64 = torch.jit.optimize_for_inference(torch.jit.script(model64))
    x = torch.from_numpy(rng.standard_normal((3, 4, 8)))
    with torch.no_grad():
        _same(fast64(x).numpy(), model64(x).numpy(), rtol=1e-12, atol=1e-12)
    assert fast64._runner.compiled_groups >= 2


@pytest.mark.parametrize("shape", ["(y.shape[-1],)", "[y.size(-1)]", "y.shape[-1:]"])
def test_a_scripted_layer_norm_over_its_inputs_last_size_fuses_and_no_new_size_compiles(shape):
    """F.layer_norm(y, (y.shape[-1],), w, b) scripted without example inputs: one group with the chain
    before it, compiled at the first call for its dtype and rank; no new batch or feature size
    compiles anything, and every size equals the reference interpreter."""
    scripted = torch.jit.script(define(f"""
    def norm(x, w, b):
        y = x * 2.0 + 1.0
        return torch.nn.functional.layer_norm(y, {shape}, w, b)
    """))
    fast = torch.jit.optimize_for_inference(scripted)
    [group] = _groups(fast.graph)
    assert group.attrs["kind"] == "reduction" and "guard" not in group.attrs
    rng = np.random.default_rng(4)

    def call(*shape):
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in (shape, shape[-1:], shape[-1:]))
        got = fast(*map(torch.from_numpy, (x, w, b))).numpy()
        _same(got, Interpreter(scripted.graph).run([x, w, b])[0])
    call(3, 16)
    assert _kernels(fast) == 1
    compiles = STATS.compiles
    for shape in [(1, 16), (7, 16), (1023, 16), (2, 1), (5, 7), (2, 1023), (128, 200)]:
        call(*shape)
    assert STATS.compiles == compiles and _kernels(fast) == 1
    call(2, 5, 16)  # another rank: its own kernel
    assert _kernels(fast) == 2


def test_groups_inside_control_flow_compile_at_their_first_call():
    fn = define("""
    def branchy(x, n: int):
        if n > 2:
            y = torch.sigmoid(x) * 2.0 + 1.0
        else:
            y = torch.tanh(x) - 1.0
        for i in range(n):
            y = y * 0.5 + torch.relu(y)
        return y
    """)
    scripted = torch.jit.script(fn)
    fast = torch.jit.optimize_for_inference(scripted)
    assert [n.op for n in fast.graph.block].count("prim::If") == 1 and len(_groups(fast.graph)) == 3
    rng = np.random.default_rng(3)
    for n, shape in [(3, (4, 6)), (1, (4, 6)), (4, (9,)), (0, (2, 2, 2))]:
        x = rng.standard_normal(shape).astype(np.float32)
        _same(fast(torch.from_numpy(x), n).numpy(), Interpreter(scripted.graph).run([x, n])[0])
    assert fast._runner.compiled_groups == 3


def test_an_epilogue_that_broadcasts_its_heads_result_larger_runs_the_reference():
    """A scripted graph has no shapes, so the second convolution's group takes the multiply by the
    input; at run time its [N, C, 1, 1] result broadcasts against [N, C, H, W], which the kernel
    (reading the head's result as spanning the iteration space) cannot do: the reference runs."""
    model = SqueezeExcitation().eval()
    fast = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model)))
    assert any(n.op == "mul" for g in _groups(fast.graph) for n in g.blocks[0])
    rng = np.random.default_rng(3)
    for batch, size in [(2, 6), (1, 5), (3, 1)]:
        x = torch.from_numpy(rng.standard_normal((batch, 8, size, size)).astype(np.float32))
        with torch.no_grad():
            _same(fast(x).numpy(), model(x).numpy())


def test_a_signature_no_kernel_takes_runs_the_reference():
    scripted = torch.jit.script(define("""
    def ints(x, y):
        return (x + y) * 3 - y
    """))
    fast = torch.jit.optimize_for_inference(scripted)
    x, y = np.arange(6).reshape(2, 3), np.arange(3)
    np.testing.assert_array_equal(fast(torch.from_numpy(x), torch.from_numpy(y)).numpy(), (x + y) * 3 - y)
    a, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    with pytest.raises(RuntimeError, match="must match"):
        fast(torch.from_numpy(a), torch.from_numpy(b))


def test_a_second_process_compiles_nothing(tmp_path):
    path = tmp_path / "gelu.py"
    path.write_text("import scriptc as torch\n" + textwrap.dedent(GELU))
    code = textwrap.dedent(f"""
        import sys, numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import scriptc as torch
        from scriptc.codegen.llvm.driver import STATS
        from gelu import gelu_chain
        fast = torch.jit.optimize_for_inference(torch.jit.script(gelu_chain))
        w, b = torch.randn(5), torch.randn(5)
        for rows in (1, 7, 300):
            fast(torch.randn(rows, 5), w, b)
        print(STATS.compiles, STATS.disk_hits)
    """)
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    compiles, hits = map(int, second.stdout.split())
    assert compiles == 0 and hits >= 1, (first.stdout, second.stdout)
