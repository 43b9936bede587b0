"""Test models shared by the trace, script, pass, codegen and archive tests (scriptc.nn only)."""

from __future__ import annotations

from enum import Enum
from typing import Dict, List, NamedTuple, Tuple, Union

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


class Pair(NamedTuple):
    lo: float
    hi: float


class Mode(Enum):
    ADD = 1
    MUL = 2


class Tally:
    def __init__(self, start: int) -> None:
        self.count = start
        self.scale = torch.ones(2)
        self.history: List[int] = []

    def step(self) -> int:
        self.count += 1
        self.history.append(self.count)
        return self.count


class ScriptFeatures(nn.Module):
    """What the script frontend adds to an archive: a script object among the attributes (with a tensor
    field) and its class's methods as functions, typed container and tensor attributes, Enum and
    NamedTuple values, a Union input refined by isinstance."""

    def __init__(self):
        super().__init__()
        self.tally = Tally(1)
        self.table: Dict[str, List[float]] = {"a": [1.0, 2.0]}
        self.extras = [torch.ones(2), torch.zeros(2)]
        self.bounds = (0.0, 4.0)
        self.fc = nn.Linear(2, 2)

    def forward(self, x, k: Union[int, float], mode: int) -> Tuple[torch.Tensor, List[int]]:
        bounds = Pair(self.bounds[0], self.bounds[1])
        scale = 1.0
        if isinstance(k, int):
            scale = float(k)
        else:
            scale = k
        y = self.fc(x) * self.tally.scale + self.extras[0]
        y = y + scale if (Mode.ADD if mode == 1 else Mode.MUL) == Mode.ADD else y * scale
        y = torch.clamp(y, bounds.lo, bounds.hi) + self.table["a"][0]
        self.tally.step()
        return y, self.tally.history


def make_inputs(name, batch, generator=None):
    shapes = {"MLP": (batch, 16), "CNN": (batch, 3, 12, 12), "LSTMLoop": (batch, 6), "TransformerBlock": (batch, 5, 16)}
    return torch.randn(*shapes[name])


ALL = {"MLP": MLP, "CNN": CNN, "LSTMLoop": LSTMLoop, "TransformerBlock": TransformerBlock}
