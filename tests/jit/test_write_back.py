"""A scripted module's list and dict attributes come back from the runtime without replacing the tensors the
runtime left unchanged: an nn.LSTM's _flat_weights stay its parameters after its scripted form has run, so
the eager module still trains (its parameters get gradients)."""

from __future__ import annotations

from typing import List

import scriptc
from scriptc import nn


class WeightList(nn.Module):
    weights: List[scriptc.Tensor]
    seen: List[scriptc.Tensor]

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(scriptc.randn(3))
        self.b = nn.Parameter(scriptc.randn(3))
        self.weights = [self.a, self.b]
        self.seen = []

    def forward(self, x):
        self.seen.append(x * 2)
        return x * self.weights[0] + self.weights[1]


def test_unchanged_list_elements_stay_the_same_objects():
    model = WeightList()
    scripted = scriptc.jit.script(model)
    with scriptc.no_grad():
        scripted(scriptc.ones(3))
    assert scripted.weights[0] is model.a and scripted.weights[1] is model.b
    assert len(scripted.seen) == 1 and model.seen == []  # (the scripted module's list is a copy, as torch's)
    model(scriptc.ones(3)).sum().backward()
    assert model.a.grad is not None and model.b.grad is not None


def test_lstm_trains_after_its_scripted_form_ran():
    lstm = nn.LSTM(4, 5, batch_first=True)
    scripted = scriptc.jit.script(lstm)
    x = scriptc.randn(2, 3, 4)
    with scriptc.no_grad():
        scripted(x)
    assert all(w is getattr(lstm, n) for w, n in zip(lstm._flat_weights, lstm._flat_weights_names))
    lstm(x)[0].sum().backward()
    assert all(p.grad is not None for p in lstm.parameters())
