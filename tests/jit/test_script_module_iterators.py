"""self.children() / named_children() / modules() / named_modules() in scripted code: unrolled over
the submodules, named as torch names them (a module held twice is listed twice in script, as torch
does); compared with torch 2.13 and run again from a saved archive."""

from __future__ import annotations

import io
from typing import List

import pytest

import scriptc as torch


def build(module):
    nn = module.nn

    class Leaf(nn.Module):
        def __init__(self, step: float):
            super().__init__()
            self.step = step

        def forward(self, x):
            return x * 2 + self.step

    class Branch(nn.Module):
        def __init__(self, shared):
            super().__init__()
            self.leaf = Leaf(1.0)
            self.shared = shared

        def forward(self, x):
            return self.leaf(x)

    class Tree(nn.Module):
        def __init__(self):
            super().__init__()
            shared = Leaf(3.0)
            self.left = Branch(shared)
            self.right = Branch(shared)
            self.absent = None
            self.chain = nn.Sequential(Leaf(0.5), Leaf(-1.0))

        def forward(self, x):
            names: List[str] = []
            for name, _ in self.named_modules():
                names.append(name)
            count = 0
            for _ in self.modules():
                count += 1
            for name, _ in self.named_children():
                names.append("child:" + name)
            for child in self.chain.children():
                x = child(x)
            return x, names, count

    return Tree()


def test_module_iterators_match_torch():
    real = pytest.importorskip("torch")
    ours = torch.jit.script(build(torch))(torch.tensor([1.0, 2.0]))
    theirs = real.jit.script(build(real))(real.tensor([1.0, 2.0]))
    assert ours[0].tolist() == theirs[0].tolist()
    assert ours[1:] == theirs[1:]


def test_module_iterators_survive_save_and_load():
    scripted = torch.jit.script(build(torch))
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    x = torch.tensor([0.5, -3.0])
    want, got = scripted(x), loaded(x)
    assert torch.equal(got[0], want[0]) and got[1:] == want[1:]
    assert want[1][:3] == ["", "left", "left.leaf"] and want[2] == 10
