"""A traced model that packs its padded batch takes the lengths as data: the traced, optimized and saved
graphs give torch's results at lengths (and sequence lengths) they were not traced with."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc

from ..compare import copy_weights

torch = pytest.importorskip("torch")


def _encoder(lib, kind: str, batch_first: bool, enforce_sorted: bool):
    options = {"proj_size": 3} if kind == "LSTM" else {}

    class Encoder(lib.nn.Module):
        """Embedding, packed recurrent layers, padded back (the chatbot tutorial's encoder)."""

        def __init__(self):
            super().__init__()
            self.embedding = lib.nn.Embedding(20, 4)
            self.rnn = getattr(lib.nn, kind)(4, 5, 2, bidirectional=True, batch_first=batch_first, **options)

        def forward(self, tokens, lengths):
            packed = lib.nn.utils.rnn.pack_padded_sequence(self.embedding(tokens), lengths, batch_first=batch_first,
                                                           enforce_sorted=enforce_sorted)
            outputs, hidden = self.rnn(packed)
            outputs, out_lengths = lib.nn.utils.rnn.pad_packed_sequence(outputs, batch_first=batch_first)
            h_n = hidden[0] if kind == "LSTM" else hidden
            return outputs, h_n, out_lengths

    return Encoder().eval()


def _inputs(lib, steps: int, lengths, batch_first: bool, seed: int):
    tokens = np.random.default_rng(seed).integers(0, 20, (steps, len(lengths)))
    if batch_first:
        tokens = np.ascontiguousarray(tokens.T)
    return lib.tensor(tokens), lib.tensor(lengths)


def _assert_matches(ours, theirs, what: str):
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(mine), ref.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("kind, batch_first, enforce_sorted", [
    ("GRU", False, False), ("LSTM", False, True), ("RNN", True, False)])
def test_a_traced_packing_encoder_runs_at_lengths_it_was_not_traced_with(kind, batch_first, enforce_sorted,
                                                                          tmp_path):
    theirs = _encoder(torch, kind, batch_first, enforce_sorted)
    ours = _encoder(scriptc, kind, batch_first, enforce_sorted)
    copy_weights(theirs, ours)
    traced = scriptc.jit.trace(ours, _inputs(scriptc, 6, [6, 4, 3], batch_first, 0))
    optimized = scriptc.jit.optimize_for_inference(traced)
    traced.save(tmp_path / "encoder.sc")
    loaded = scriptc.jit.load(tmp_path / "encoder.sc")
    # other lengths at the traced shape (any order unless enforce_sorted), then other padded lengths
    calls = [(6, [6, 5, 1]), (6, [2, 2, 2])] if enforce_sorted else [(6, [2, 6, 5]), (6, [3, 1, 3])]
    calls += [(9, [9, 7, 2]), (3, [3, 3, 1])] if not batch_first else []
    for seed, (steps, lengths) in enumerate(calls, 1):
        with torch.no_grad():
            expected = theirs(*_inputs(torch, steps, lengths, batch_first, seed))
        with scriptc.no_grad():
            for name, model in (("traced", traced), ("optimized", optimized), ("loaded", loaded),
                                ("eager", ours)):
                got = model(*_inputs(scriptc, steps, lengths, batch_first, seed))
                _assert_matches(got, expected, f"{name} at {steps} steps, lengths {lengths}")


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_a_traced_packing_encoder_sizes_its_initial_state_by_the_batch_it_is_given(kind):
    """The zero initial state follows batch_sizes: sorted lengths at a batch the trace did not see."""
    theirs = _encoder(torch, kind, False, True)
    ours = _encoder(scriptc, kind, False, True)
    copy_weights(theirs, ours)
    traced = scriptc.jit.trace(ours, _inputs(scriptc, 5, [5, 4, 2], False, 0))
    optimized = scriptc.jit.optimize_for_inference(traced)
    for seed, lengths in enumerate(([4, 1], [5, 5, 3, 2, 1]), 1):
        with torch.no_grad():
            expected = theirs(*_inputs(torch, 5, lengths, False, seed))
        with scriptc.no_grad():
            for name, model in (("traced", traced), ("optimized", optimized)):
                _assert_matches(model(*_inputs(scriptc, 5, lengths, False, seed)), expected, f"{name} at {lengths}")


def test_gradients_flow_through_a_traced_packing_encoder_at_new_lengths():
    theirs = _encoder(torch, "GRU", False, False).train()
    ours = _encoder(scriptc, "GRU", False, False).train()
    copy_weights(theirs, ours)
    traced = scriptc.jit.trace(ours, _inputs(scriptc, 5, [5, 2], False, 0))
    outputs, h_n, _ = traced(*_inputs(scriptc, 4, [1, 4], False, 3))
    (outputs.sum() + h_n.square().sum()).backward()
    expected_outputs, expected_h, _ = theirs(*_inputs(torch, 4, [1, 4], False, 3))
    (expected_outputs.sum() + expected_h.square().sum()).backward()
    for (name, mine), ref in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_traced_packing_encoder_raises_torchs_error_for_lengths_out_of_order():
    model = _encoder(scriptc, "GRU", False, True)
    traced = scriptc.jit.trace(model, _inputs(scriptc, 4, [4, 2], False, 0))
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        traced(*_inputs(scriptc, 4, [2, 4], False, 1))
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        traced(*_inputs(scriptc, 4, [4, 0], False, 1))


@pytest.mark.parametrize("total_length", [0, -1, 2, 7])
def test_the_pad_op_pads_to_total_length_or_the_longest_as_torchs(total_length):
    padded = np.random.default_rng(2).standard_normal((5, 3, 2)).astype(np.float32)

    def pad(lib):
        data, batch_sizes = lib._pack_padded_sequence(lib.tensor(padded), lib.tensor([5, 3, 2]), False)
        return lib._pad_packed_sequence(data, batch_sizes, False, 0.5, total_length)

    try:
        expected = pad(torch)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error)):
            pad(scriptc)
        return
    _assert_matches(pad(scriptc), expected, f"total_length={total_length}")
