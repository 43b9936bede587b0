"""sink_embedding: an If between row views of one embedding becomes the embedding of the If of its
indices, on IR text; end to end, a scripted (no example inputs) LSTM over embeddings gets its first
layer's input projection folded into the table and matches eager at sizes never seen."""

from __future__ import annotations

import numpy as np

import scriptc
from scriptc import ir
from scriptc.passes.dce import dce
from scriptc.passes.refine_ranks import refine_ranks
from scriptc.passes.shape_infer import shape_infer
from scriptc.passes.sink_embedding import sink_embedding
from scriptc.runtime import Interpreter

from .filecheck import filecheck
from .test_refine_ranks import rank_branch_text


def _sunk(text: str):
    g = ir.parse(text)
    refine_ranks(g)
    shape_infer(g)
    changed = sink_embedding(g)
    dce(g)
    ir.verify(g)
    return g, changed


def test_the_if_picks_indices_and_one_embedding_reads_them():
    text = rank_branch_text()
    g, changed = _sunk(text)
    assert changed
    filecheck(str(g), "CHECK: dim(%i)\nCHECK: add.scalar(\nCHECK: = prim::If(%not3)\n"
                      "CHECK-NEXT: block0\nCHECK-NEXT: = prim::Refine(%i)\nCHECK-NEXT: unsqueeze(\n"
                      "CHECK: block1\nCHECK-NEXT: = prim::Refine(%i)\n"
                      "CHECK: Tensor(float32, [?, ?, 3]) = embedding(%y, %e, %n, %f)\n"
                      "CHECK-COUNT-1: embedding(")
    for idx in (np.arange(8).reshape(2, 4), np.arange(5), np.arange(3).reshape(1, 3)):
        for got, want in zip(Interpreter(g).run([idx]), Interpreter(ir.parse(text)).run([idx])):
            np.testing.assert_array_equal(got, want)


def test_an_unsqueeze_after_the_rows_or_another_value_stays():
    for text in (rank_branch_text().replace("unsqueeze(%x, %one)", "unsqueeze(%x, %two)"),  # (splits the rows)
                 rank_branch_text().replace("      -> (%x)\n", "      %r : Tensor(float32) = relu(%x)\n"
                                                                "      -> (%r)\n")):  # (not a view of them)
        g, _ = _sunk(text)
        filecheck(str(g), "CHECK-COUNT-1: embedding(\nCHECK: = embedding(%i,\nCHECK: = prim::If(%not3)")


def _model(T):
    """pytorch/examples' word-LM shape: dropout over an embedding into a 2-layer LSTM, then a decoder."""
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = T.nn.Dropout(0.2)
            self.encoder = T.nn.Embedding(50, 16)
            self.rnn = T.nn.LSTM(16, 12, 2, dropout=0.2)
            self.decoder = T.nn.Linear(12, 50)

        def forward(self, tokens, h0, c0):
            out, (h, c) = self.rnn(self.drop(self.encoder(tokens)), (h0, c0))
            return self.decoder(self.drop(out)), h, c
    return Net()


def test_scripted_lstm_over_embeddings_folds_and_matches_eager_at_new_sizes():
    scriptc.manual_seed(0)
    net = _model(scriptc).eval()
    fast = scriptc.jit.optimize_for_inference(scriptc.jit.script(net), threads=1)
    folded = [line for line in str(fast.graph).splitlines() if "embedding(" in line]
    assert len(folded) == 1 and ", 48]) = embedding(" in folded[0], folded
    rng = np.random.default_rng(1)
    with scriptc.no_grad():
        for shape in ((6, 4), (1, 1), (9, 7), (5,)):
            state = shape[1:]
            xs = [scriptc.from_numpy(rng.integers(0, 50, shape).astype(np.int64)),
                  scriptc.from_numpy(rng.standard_normal((2, *state, 12)).astype(np.float32)),
                  scriptc.from_numpy(rng.standard_normal((2, *state, 12)).astype(np.float32))]
            for ours, eager in zip(fast(*xs), net(*xs)):
                assert ours.shape == eager.shape
                np.testing.assert_allclose(ours.numpy(), eager.numpy(), rtol=1e-4, atol=1e-5)
