"""What a segment program hands back (runtime/segments.py): views of its out arena, the same arrays
again on a steady call whose caller kept nothing, and never an array a caller still holds - or holds
a view of - written over."""

from __future__ import annotations

import numpy as np

import scriptc as torch
from scriptc.runtime.executor import Executor


class _TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(10, 16)
        self.left = torch.nn.Linear(16, 3)
        self.right = torch.nn.Linear(16, 5)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.left(h), torch.tanh(self.right(h))


def _executor() -> Executor:
    torch.manual_seed(0)
    model = _TwoHeads().eval()
    traced = torch.jit.trace(model, torch.randn(2, 10))
    graph = torch.jit.optimize_for_inference(traced, jit=False).graph
    executor = Executor(graph, threads=1)
    assert executor.whole is not None  # (one program runs the whole plan)
    return executor


def _reference(executor, x):
    from scriptc.runtime.interpreter import Interpreter
    return Interpreter(executor.graph).run([x])[0]


def test_results_held_in_any_form_are_never_written_over():
    executor = _executor()
    rng = np.random.default_rng(0)
    kept = []
    for call, batch in enumerate((2, 2, 2, 5, 5, 1, 2)):
        x = rng.standard_normal((batch, 10)).astype(np.float32)
        ((left, right),) = executor([x])
        expected = _reference(executor, x)
        np.testing.assert_allclose(left, expected[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(right, expected[1], rtol=1e-5, atol=1e-6)
        if call % 3 == 0:
            kept.append((left, left.copy()))            # the array itself
        elif call % 3 == 1:
            kept.append((right[1:], right[1:].copy()))  # only a view of it
    for held, copy in kept:
        np.testing.assert_array_equal(held, copy)


def test_a_steady_call_whose_results_were_dropped_hands_the_same_arrays_back():
    executor = _executor()
    x = np.ones((4, 10), np.float32)
    executor([x])  # (the steps run the first call)
    first = [id(a) for a in executor([x])[0]]
    assert [id(a) for a in executor([x])[0]] == first
    held = executor([x])[0]
    again = executor([x])[0]
    assert all(a is not b for a, b in zip(held, again))  # another arena while the caller holds one
    np.testing.assert_array_equal(held[0], again[0])
    assert executor([np.ones((6, 10), np.float32)])[0][0].shape == (6, 3)


def test_calls_at_a_few_batches_each_get_their_own_arrays_back():
    # (load primes a model at a few batches: a first real call at any of them makes no array)
    executor = _executor()
    batches = (1, 2, 3)
    for batch in batches:  # (the steps run the first call of each, the program the second)
        executor([np.ones((batch, 10), np.float32)])
        executor([np.ones((batch, 10), np.float32)])
    ids = {batch: [id(a) for a in executor([np.ones((batch, 10), np.float32)])[0]] for batch in batches}
    for batch in batches + batches[::-1]:
        assert [id(a) for a in executor([np.ones((batch, 10), np.float32)])[0]] == ids[batch]


def test_a_result_held_past_the_shapes_an_arena_keeps_is_never_written_over():
    from scriptc.runtime.segments import ARENA_SHAPES
    executor = _executor()
    rng = np.random.default_rng(1)
    executor([np.ones((1, 10), np.float32)])
    (held, _), = executor([np.ones((1, 10), np.float32)])
    copy = held.copy()
    for batch in list(range(2, ARENA_SHAPES + 3)) + [1]:  # (shape 1's views dropped, then asked for again)
        x = rng.standard_normal((batch, 10)).astype(np.float32)
        (left, _), = executor([x])
        np.testing.assert_allclose(left, _reference(executor, x)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(held, copy)


def _element_of_a_product(x, w):
    h = torch.matmul(x, w)
    return h[0, 1] * 2.0 + 1.0, torch.relu(h)


def test_a_group_reading_one_element_view_of_a_product_runs_in_the_program():
    """h[0, 1] is a 0-d view of the product: its group's kernel iterates a 0-d space with strides,
    which the lowering gave no rows to (RAFT scripted and optimized raised IndexError)."""
    fast = torch.jit.optimize_for_inference(torch.jit.script(_element_of_a_product))
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    element, activated = fast(torch.from_numpy(x), torch.from_numpy(w))
    product = x @ w
    np.testing.assert_allclose(element.numpy(), product[0, 1] * 2 + 1, rtol=1e-5)
    np.testing.assert_allclose(activated.numpy(), np.maximum(product, 0), rtol=1e-5, atol=1e-6)


def _scaled_by_a_channel_count(f1, f2):
    corr = torch.matmul(f1, f2).view(f1.shape[0], -1)
    return corr / torch.sqrt(torch.tensor(f1.shape[1]))


def test_a_group_starting_on_a_0d_tensor_iterates_the_broadcast_space_on_every_call():
    """RAFT's corr / torch.sqrt(torch.tensor(num_channels)): the group's first op is the 0-d sqrt,
    and its kernel took that op's rank (0) for the iteration's; the steps fell back to the
    reference, the program (from the second call on) computed one element of garbage."""
    fast = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(_scaled_by_a_channel_count)))
    rng = np.random.default_rng(5)
    for _ in range(3):
        f1, f2 = rng.standard_normal((2, 4, 8)).astype(np.float32), rng.standard_normal((2, 8, 4)).astype(np.float32)
        got = fast(torch.from_numpy(f1), torch.from_numpy(f2)).numpy()
        np.testing.assert_allclose(got, (f1 @ f2).reshape(2, -1) / 2.0, rtol=1e-5, atol=1e-6)
