"""Test models shared by the trace, script, pass, codegen and archive tests (scriptc.nn only)."""

from __future__ import annotations

import scriptc as torch
import scriptc.nn as nn
import scriptc.nn.functional as F


class MLP(nn.Module):
    def __init__(self, sizes=(16, 32, 32, 4)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv1(x))))
        x = F.relu(self.conv2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class LSTMLoop(nn.Module):
    def __init__(self, steps=4):
        super().__init__()
        self.cell = nn.LSTMCell(6, 8)
        self.out = nn.Linear(8, 2)
        self.steps = steps

    def forward(self, x):
        h = torch.zeros(x.size(0), 8)
        c = torch.zeros(x.size(0), 8)
        for _ in range(self.steps):
            h, c = self.cell(x, (h, c))
        return self.out(h), c


class TransformerBlock(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


def make_inputs(name, batch, generator=None):
    shapes = {"MLP": (batch, 16), "CNN": (batch, 3, 12, 12), "LSTMLoop": (batch, 6), "TransformerBlock": (batch, 5, 16)}
    return torch.randn(*shapes[name])


ALL = {"MLP": MLP, "CNN": CNN, "LSTMLoop": LSTMLoop, "TransformerBlock": TransformerBlock}
