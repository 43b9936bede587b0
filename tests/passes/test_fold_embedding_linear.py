"""fold_embedding_linear: a frozen linear of frozen embedding rows becomes an embedding of the product
table, on IR text and end to end against eager at sizes the trace did not see."""

from __future__ import annotations

import numpy as np

import scriptc
from scriptc import ir
from scriptc.ir.printer import format_attr
from scriptc.passes.fold_embedding_linear import fold_embedding_linear
from scriptc.runtime import Interpreter

from .filecheck import filecheck

RNG = np.random.default_rng(0)
E = RNG.standard_normal((10, 3)).astype(np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)
BIAS = RNG.standard_normal(4).astype(np.float32)


def _text(extra_use: str = "", result: str = "%y") -> str:
    return ("graph(%i : Tensor(int64, [5, B])):\n"
            f"  %e : Tensor(float32, [10, 3]) = prim::Constant[value={format_attr(E)}]()\n"
            f"  %w : Tensor(float32, [4, 3]) = prim::Constant[value={format_attr(W)}]()\n"
            f"  %b : Tensor(float32, [4]) = prim::Constant[value={format_attr(BIAS)}]()\n"
            "  %n : None = prim::Constant[value=None]()\n  %f : bool = prim::Constant[value=False]()\n"
            "  %x : Tensor(float32, [5, B, 3]) = embedding(%i, %e, %n, %f)\n"
            "  %one : int = prim::Constant[value=1]()\n  %five : int = prim::Constant[value=5]()\n"
            "  %bs : int = size(%x, %one)\n  %rows : int = mul.scalar(%five, %bs)\n"
            "  %three : int = prim::Constant[value=3]()\n"
            "  %shape : List[int] = prim::ListConstruct(%rows, %three)\n"
            "  %r : Tensor(float32, [?, 3]) = reshape(%x, %shape)\n"
            f"  %y : Tensor(float32, [?, 4]) = linear(%r, %w, %b)\n{extra_use}  return ({result}, %bs)\n")


def _run(text: str, idx: np.ndarray):
    return Interpreter(ir.parse(text)).run([idx])


def test_folds_through_the_reshape_and_moves_the_size_reads():
    idx = RNG.integers(0, 10, (5, 2))
    before = _run(_text(), idx)
    g = ir.parse(_text())
    assert fold_embedding_linear(g)
    ir.verify(g)
    filecheck(str(g), "CHECK-NOT: linear(\nCHECK: Tensor(float32, [10, 4]) = prim::Constant\n"
                      "CHECK-NEXT: embedding(%i,")
    after = Interpreter(g).run([idx])
    np.testing.assert_allclose(after[0], before[0], rtol=1e-5, atol=1e-6)
    assert after[1] == before[1] == 2
    other = RNG.integers(0, 10, (5, 7))  # (a batch the text's first run did not have)
    np.testing.assert_allclose(Interpreter(g).run([other])[0],
                               E[other.reshape(-1)].astype(np.float64) @ W.T + BIAS, rtol=1e-5, atol=1e-5)


def test_leaves_an_embedding_something_else_reads():
    text = _text(result="%x")
    g = ir.parse(text)
    assert not fold_embedding_linear(g)
    text = _text("  %s : Tensor(float32, [10, 3]) = relu(%e)\n", "%s")
    g = ir.parse(text)
    assert not fold_embedding_linear(g)  # (the embedding's weight has another reader)


def _model(T, bias: bool):
    """An LSTM over embeddings (its input projection reshapes to rows), or without bias a linear of them."""
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = T.nn.Embedding(50, 16)
            self.rnn = T.nn.LSTM(16, 12, 2)
            self.proj = T.nn.Linear(16, 8, bias=False)

        def forward(self, tokens, h0, c0):
            if bias:
                out, (h, c) = self.rnn(self.encoder(tokens), (h0, c0))
                return out, h, c
            return self.proj(self.encoder(tokens)), h0
    return Net()


def test_traced_lstm_and_linear_of_embeddings_match_eager_at_new_batches():
    for bias in (True, False):
        scriptc.manual_seed(0)
        net = _model(scriptc, bias).eval()
        rng = np.random.default_rng(1)

        def inputs(steps, batch):
            return [scriptc.from_numpy(rng.integers(0, 50, (steps, batch)).astype(np.int64)),
                    scriptc.from_numpy(rng.standard_normal((2, batch, 12)).astype(np.float32)),
                    scriptc.from_numpy(rng.standard_normal((2, batch, 12)).astype(np.float32))]
        traced = scriptc.jit.trace(net, tuple(inputs(6, 4)), check_trace=False)
        fast = scriptc.jit.optimize_for_inference(traced, threads=1)
        folded = [line for line in str(fast.graph).splitlines() if "embedding(" in line]
        assert len(folded) == 1 and (", 48]" if bias else ", 8]") in folded[0], folded
        with scriptc.no_grad():
            for batch in (4, 1, 9):
                xs = inputs(6, batch)
                for ours, eager in zip(fast(*xs), net(*xs)):
                    np.testing.assert_allclose(ours.numpy(), eager.numpy(), rtol=1e-4, atol=1e-5)
