"""jit.script of a module holding traced submodules: each call inlines the traced graph (as torch's
script compiler does), so a child whose Python source does not script still compiles; modules
shared by two owners save and load."""

import io

import numpy as np
import pytest

import scriptc
from scriptc.testing import assert_close

torch = pytest.importorskip("torch")


def _program(lib):
    class Encoder(lib.nn.Module):
        def __init__(self, embedding):
            super().__init__()
            self.embedding = embedding
            self.proj = lib.nn.Linear(6, 6)
            self.scale = 2

        def forward(self, tokens, lengths):
            # Python-only code (a lambda, sizes read with .item()): traces, does not script
            activation = lambda t: lib.tanh(t) * self.scale  # noqa: E731
            return activation(self.proj(self.embedding(tokens))) + int(lengths[0].item()) * 0.0

    class Searcher(lib.nn.Module):
        def __init__(self, encoder, head):
            super().__init__()
            self.encoder = encoder
            self.head = head

        def forward(self, tokens, lengths, steps: int):
            hidden = self.encoder(tokens, lengths)
            total = lib.zeros([0])
            for _ in range(steps):
                hidden = self.head(hidden)
                total = lib.cat((total, hidden.sum(1)), 0)
            return total

    return Encoder, Searcher


def _build(lib, weights=None):
    encoder_cls, searcher_cls = _program(lib)
    embedding = lib.nn.Embedding(10, 6)
    encoder = encoder_cls(embedding).eval()
    head = lib.nn.Sequential(lib.nn.Linear(6, 6), lib.nn.Tanh())
    searcher = searcher_cls(encoder, head)
    if weights is not None:
        searcher.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    return searcher, embedding


def test_a_scripted_module_inlines_its_traced_children_like_torch(tmp_path):
    theirs, _ = _build(torch)
    weights = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours, _ = _build(scriptc, weights)
    tokens = np.random.randint(0, 10, (4, 3)).astype(np.int64)
    lengths = np.array([3, 3, 3, 3], dtype=np.int64)
    results = {}
    for lib, model in ((torch, theirs), (scriptc, ours)):
        example = (lib.from_numpy(tokens.copy()), lib.from_numpy(lengths.copy()))
        with pytest.warns(Warning):
            model.encoder = lib.jit.trace(model.encoder, example)
        scripted = lib.jit.script(model)
        with lib.no_grad():
            results[lib.__name__] = scripted(*example, 3).numpy(), model(*example, 3).numpy()
    ours_scripted, ours_eager = results["scriptc"]
    assert_close(ours_scripted, results["torch"][0], rtol=1e-5, atol=1e-5)
    assert_close(ours_scripted, ours_eager, rtol=1e-5, atol=1e-5)


def test_a_module_shared_by_two_owners_saves_and_loads():
    encoder_cls, _ = _program(scriptc)

    class TwoOwners(scriptc.nn.Module):
        def __init__(self):
            super().__init__()
            shared = scriptc.nn.Embedding(10, 6)
            self.first = encoder_cls(shared)
            self.second = encoder_cls(shared)

        def forward(self, tokens):
            return self.first.embedding(tokens) + self.second.embedding(tokens + 1)

    model = TwoOwners()
    scripted = scriptc.jit.script(model)
    buffer = io.BytesIO()
    scripted.save(buffer)
    buffer.seek(0)
    loaded = scriptc.jit.load(buffer)
    tokens = scriptc.from_numpy(np.random.randint(0, 9, (2, 5)).astype(np.int64))
    with scriptc.no_grad():
        assert_close(loaded(tokens), model(tokens))
