"""The script corpus: functions and modules in the TorchScript subset, each run eagerly and scripted.

CORPUS maps a name to (function or module factory, input factory). Inputs are drawn fresh per call
and chosen so that every branch is taken across the draws.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional

import scriptc as torch
import scriptc.nn as nn
import scriptc.nn.functional as F
from scriptc import jit

Tensor = torch.Tensor


def relu_or_neg(x):
    if x.sum() > 0:
        return torch.relu(x)
    else:
        return -x


def nested_branches(x, k: int):
    if k > 2:
        if k > 5:
            return x * 3
        elif k == 4:
            return x + 4
        return x - 1
    return x


def data_dependent_trip(x, n: int):
    y = x
    for i in range(n):
        y = y * 0.5 + i
    return y


def while_with_break(x):
    steps = 0
    while True:
        x = x * 2
        steps += 1
        if float(x.abs().sum()) > 100.0 or steps >= 50:
            break
    return x, steps


def continue_in_loop(x, n: int):
    total = torch.zeros_like(x)
    for i in range(n):
        if i % 3 == 0:
            continue
        total = total + x * i
    return total


def early_return_in_loop(x, n: int):
    for _ in range(n):
        if float(x.sum()) > 10.0:
            return x
        x = x + 1.0
    return x * -1.0


def optional_bias(x, bias: Optional[torch.Tensor] = None):
    if bias is not None:
        x = x + bias
    return x


def optional_scale(x, scale: Optional[float] = None) -> torch.Tensor:
    if scale is None:
        return x
    return x * scale


def build_list(x, n: int):
    ys: List[torch.Tensor] = []
    for i in range(n):
        ys.append(x * i)
    return torch.stack(ys)


def list_comprehension(x, n: int):
    parts = [x + i for i in range(n)]
    return torch.cat(parts, 0)


def tuple_return(x, y):
    return x + y, x - y, (x * y).sum()


def tuple_unpack(x):
    a, b = x.chunk(2, 0)
    return b, a


def chained_compare(x, lo: float, hi: float):
    v = float(x.mean())
    if lo < v < hi:
        return x
    return x * 0


def short_circuit(x, flag: bool):
    if flag and float(x.sum()) > 0:
        return x + 1
    if not flag or x.numel() > 100:
        return x - 1
    return x


def conditional_expression(x, k: int):
    y = x * 2 if k % 2 == 0 else x * 3
    return y


def slicing(x):
    return x[:, 1:-1:2, None, ...]


def integer_indexing(x):
    return x[0] + x[-1, 1]


def advanced_indexing(x, idx):
    return x[idx] * 2


def setitem(x):
    y = x.clone()
    y[0] = 0.0
    return y


def augmented_assignment(x):
    y = x.clone()
    y += 1
    y *= 2
    y -= x
    return y


def scalar_math(x, a: float, b: int):
    c = math.sqrt(a) + math.exp(-a) + b // 2 + b % 3 + abs(-a) + min(a, 2.0) + max(b, 1)
    return x * c + float(b) ** 2


def int_float_bool_casts(x, a: float):
    n = int(a)
    f = float(n) / 2
    return x * f + float(bool(n))


def len_and_range(xs: List[torch.Tensor]):
    total = xs[0] * 0
    for i in range(len(xs)):
        total = total + xs[i]
    return total


def enumerate_and_zip(xs: List[torch.Tensor], ys: List[torch.Tensor]):
    out = xs[0] * 0
    for i, x in enumerate(xs):
        out = out + x * i
    for a, b in zip(xs, ys):
        out = out + a * b
    return out


def dict_output(x) -> Dict[str, torch.Tensor]:
    return {"double": x * 2, "square": x * x}


def keyword_arguments(x):
    return torch.sum(x, dim=1, keepdim=True) + x.mean(dim=-1, keepdim=True)


def overloads_max(x):
    values, indices = torch.max(x, 1)
    return torch.max(x) + values.sum() + indices.sum().float() + torch.max(x, x * 2).sum()


def assert_positive(x):
    assert float(x.min()) > -100.0, "values must be above -100"
    return x.abs()


def raise_on_empty(x):
    if x.numel() == 0:
        raise ValueError("empty input")
    return x.sum()


def while_loop_counter(x, n: int):
    i = 0
    while i < n:
        x = x + 1
        i += 1
    return x


def nested_loops(x, n: int, m: int):
    acc = x * 0
    for i in range(n):
        for j in range(m):
            if j > i:
                break
            acc = acc + x * (i + j)
    return acc


def helper_square(x):
    return x * x


def helper_combine(x, y):
    return helper_square(x) + helper_square(y)


def calls_helpers(x, y):
    return helper_combine(x, y) - helper_square(x - y)


def isinstance_check(x, n: int):
    if isinstance(n, int):
        return x + n
    return x


def shape_arithmetic(x):
    b = x.size(0)
    return x.reshape(b, -1).sum(1) / x.shape[1]


def is_none_default(x, y: Optional[torch.Tensor] = None):
    if y is None:
        y = torch.ones_like(x)
    return x * y


def matmul_chain(x, w1, w2):
    return torch.tanh(x @ w1) @ w2


def softmax_and_friends(x):
    return F.softmax(x, dim=-1) + F.log_softmax(x, -1).exp() + torch.sigmoid(x) * F.gelu(x)


def range_with_step(x, n: int):
    acc = x * 0
    for i in range(n, 0, -2):
        acc = acc + i
    return acc


def string_constant_arg(x):
    return F.gelu(x, approximate="tanh")


class DecisionGate(nn.Module):
    """The TorchScript tutorial's cell: a data-dependent decision inside an RNN cell."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class GatedCell(nn.Module):
    def __init__(self):
        super().__init__()
        self.dg = DecisionGate()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class GatedRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = GatedCell()

    def forward(self, xs):
        h = torch.zeros(xs.size(1), 4)
        y = h
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class ConstantsModule(nn.Module):
    __constants__ = ["scale"]

    def __init__(self):
        super().__init__()
        self.scale = 2.5
        self.repeats = 3
        self.use_bias = True
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        for _ in range(self.repeats):
            x = self.fc(x) * self.scale
            if self.use_bias:
                x = x + 1
        return x

    @jit.export
    def doubled(self, x):
        return self.forward(x) * 2


class ModuleListModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) + i
        return self.norm(x)


class SequentialModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.1), nn.Linear(8, 2), nn.Softmax(-1))

    def forward(self, x):
        return self.body(x)


class BufferModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.ones(4) * 3)
        self.weight = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return (x - self.offset) * self.weight


class TrainingFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        if self.training:
            return x * 0
        return self.drop(x) + 1


def _t(*shape):
    return lambda rng: torch.tensor(rng.standard_normal(shape).astype("float32"))


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


CORPUS = {
    "relu_or_neg": (relu_or_neg, lambda r: (_t(5)(r),)),
    "nested_branches": (nested_branches, lambda r: (_t(3)(r), _pick(r, [0, 3, 4, 6]))),
    "data_dependent_trip": (data_dependent_trip, lambda r: (_t(3)(r), int(r.integers(0, 6)))),
    "while_with_break": (while_with_break, lambda r: (_t(4)(r),)),
    "continue_in_loop": (continue_in_loop, lambda r: (_t(3)(r), int(r.integers(0, 8)))),
    "early_return_in_loop": (early_return_in_loop, lambda r: (_t(2)(r) * 3, int(r.integers(0, 8)))),
    "optional_bias": (optional_bias, lambda r: (_t(3)(r),) if r.random() < 0.5 else (_t(3)(r), _t(3)(r))),
    "optional_scale": (optional_scale, lambda r: (_t(3)(r),) if r.random() < 0.5 else (_t(3)(r), 1.5)),
    "build_list": (build_list, lambda r: (_t(2)(r), int(r.integers(1, 5)))),
    "list_comprehension": (list_comprehension, lambda r: (_t(2)(r), int(r.integers(1, 5)))),
    "tuple_return": (tuple_return, lambda r: (_t(3)(r), _t(3)(r))),
    "tuple_unpack": (tuple_unpack, lambda r: (_t(4, 2)(r),)),
    "chained_compare": (chained_compare, lambda r: (_t(6)(r), -0.2, 0.2)),
    "short_circuit": (short_circuit, lambda r: (_t(3)(r), bool(r.random() < 0.5))),
    "conditional_expression": (conditional_expression, lambda r: (_t(3)(r), int(r.integers(0, 4)))),
    "slicing": (slicing, lambda r: (_t(3, 6, 2)(r),)),
    "integer_indexing": (integer_indexing, lambda r: (_t(3, 4)(r),)),
    "advanced_indexing": (advanced_indexing, lambda r: (_t(5, 2)(r), torch.tensor([4, 0, 2]))),
    "setitem": (setitem, lambda r: (_t(3, 2)(r),)),
    "augmented_assignment": (augmented_assignment, lambda r: (_t(3)(r),)),
    "scalar_math": (scalar_math, lambda r: (_t(2)(r), float(r.uniform(0.5, 4)), int(r.integers(0, 9)))),
    "int_float_bool_casts": (int_float_bool_casts, lambda r: (_t(2)(r), float(r.uniform(0, 3)))),
    "len_and_range": (len_and_range, lambda r: ([_t(2)(r) for _ in range(int(r.integers(1, 4)))],)),
    "enumerate_and_zip": (enumerate_and_zip, lambda r: ([_t(2)(r) for _ in range(3)], [_t(2)(r) for _ in range(2)])),
    "dict_output": (dict_output, lambda r: (_t(3)(r),)),
    "keyword_arguments": (keyword_arguments, lambda r: (_t(3, 4)(r),)),
    "overloads_max": (overloads_max, lambda r: (_t(3, 4)(r),)),
    "assert_positive": (assert_positive, lambda r: (_t(3)(r),)),
    "raise_on_empty": (raise_on_empty, lambda r: (_t(3)(r),)),
    "while_loop_counter": (while_loop_counter, lambda r: (_t(2)(r), int(r.integers(0, 5)))),
    "nested_loops": (nested_loops, lambda r: (_t(2)(r), int(r.integers(0, 4)), int(r.integers(0, 4)))),
    "calls_helpers": (calls_helpers, lambda r: (_t(3)(r), _t(3)(r))),
    "isinstance_check": (isinstance_check, lambda r: (_t(2)(r), 3)),
    "shape_arithmetic": (shape_arithmetic, lambda r: (_t(int(r.integers(1, 5)), 3, 2)(r),)),
    "is_none_default": (is_none_default, lambda r: (_t(3)(r),) if r.random() < 0.5 else (_t(3)(r), _t(3)(r))),
    "matmul_chain": (matmul_chain, lambda r: (_t(2, 3)(r), _t(3, 4)(r), _t(4, 2)(r))),
    "softmax_and_friends": (softmax_and_friends, lambda r: (_t(2, 5)(r),)),
    "range_with_step": (range_with_step, lambda r: (_t(2)(r), int(r.integers(0, 7)))),
    "string_constant_arg": (string_constant_arg, lambda r: (_t(4)(r),)),
    "GatedRNN": (lambda: GatedRNN().eval(), lambda r: (_t(int(r.integers(1, 4)), 2, 4)(r),)),
    "ConstantsModule": (lambda: ConstantsModule().eval(), lambda r: (_t(2, 3)(r),)),
    "ModuleListModel": (lambda: ModuleListModel().eval(), lambda r: (_t(2, 4)(r),)),
    "SequentialModel": (lambda: SequentialModel().eval(), lambda r: (_t(3, 4)(r),)),
    "BufferModel": (lambda: BufferModel().eval(), lambda r: (_t(2, 4)(r),)),
    "TrainingFlag": (lambda: TrainingFlag().eval(), lambda r: (_t(3)(r),)),
}
MODULES = {"GatedRNN", "ConstantsModule", "ModuleListModel", "SequentialModel", "BufferModel", "TrainingFlag"}
