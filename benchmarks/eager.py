"""Eager mode: per-op overhead on tiny tensors, one training step of a 784-512-512-10 MLP at batch 64,
ConvTranspose2d forward + backward at DCGAN's generator sizes, and nn.LSTM forward + backward at
word_language_model's size.

Prints time per call for scriptc, numpy and torch (when installed) and scriptc's ratio to torch
(above 1 means scriptc is faster). Targets (issue: eager tensors): the training step no slower than
torch eager; per-op overhead within 2x of torch's. Issue #27: ConvTranspose2d and nn.LSTM within 1.5x of
torch eager at one thread (both libraries, and numpy's BLAS, held to one thread for those tables).
"""

from __future__ import annotations

import numpy as np

from common import optional, table, timeit, timeit_interleaved
from threadpoolctl import threadpool_limits

import scriptc

torch = optional("torch")
if torch is not None:
    torch.set_num_threads(2)


def per_op_rows():
    a_np, b_np = np.random.rand(10).astype(np.float32), np.random.rand(10).astype(np.float32)
    a, b = scriptc.tensor(a_np), scriptc.tensor(b_np)
    cases = {
        "add (a + b)": (lambda: a + b, lambda: np.add(a_np, b_np), lambda x, y: x + y),
        "mul by scalar (a * 2.0)": (lambda: a * 2.0, lambda: a_np * 2.0, lambda x, y: x * 2.0),
        "exp": (lambda: a.exp(), lambda: np.exp(a_np), lambda x, y: x.exp()),
        "relu": (lambda: scriptc.relu(a), lambda: np.maximum(a_np, 0), lambda x, y: torch.relu(x)),
        "sum()": (lambda: a.sum(), lambda: a_np.sum(), lambda x, y: x.sum()),
        "view(2, 5)": (lambda: a.view(2, 5), lambda: a_np.reshape(2, 5), lambda x, y: x.view(2, 5)),
        "matmul 10x10": None,
    }
    m_np = np.random.rand(10, 10).astype(np.float32)
    m = scriptc.tensor(m_np)
    cases["matmul 10x10"] = (lambda: m @ m, lambda: m_np @ m_np, None)
    rows = []
    if torch is not None:
        ta, tb, tm = torch.tensor(a_np), torch.tensor(b_np), torch.tensor(m_np)
    for name, (ours, numpy_fn, torch_fn) in cases.items():
        timings = {"scriptc": timeit(ours), "numpy": timeit(numpy_fn)}
        if torch is not None:
            timings["torch"] = timeit((lambda f: lambda: f(ta, tb))(torch_fn) if torch_fn else lambda: tm @ tm)
        rows.append((name, timings))
    return rows


def mlp(T):
    return T.nn.Sequential(T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(),
                           T.nn.Linear(512, 10))


def training_step_row():
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, 64)
    timings = {}
    for name, T in (("scriptc", scriptc), ("torch", torch)):
        if T is None:
            continue
        model = mlp(T)
        opt = T.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = T.tensor(x_np), T.tensor(y_np)

        def step():
            loss = T.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        timings[name] = timeit(step, min_time=0.5)
    return [("train step MLP 784-512-512-10 b64", timings)]


# DCGAN's generator (pytorch/examples dcgan/main.py: nz=100, ngf=64, nc=3) at batch 64:
# (in_channels, out_channels, stride, padding, input size) of its five 4x4 ConvTranspose2d layers.
DCGAN_GENERATOR = [(100, 512, 1, 0, 1), (512, 256, 2, 1, 4), (256, 128, 2, 1, 8), (128, 64, 2, 1, 16),
                   (64, 3, 2, 1, 32)]


def conv_transpose_rows():
    """Forward + backward (input and weight gradients) of each generator layer, one thread each."""
    rng = np.random.default_rng(0)
    rows = []
    previous_threads = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=1, user_api="blas"):
        if torch is not None:
            torch.set_num_threads(1)
        for cin, cout, stride, padding, size in DCGAN_GENERATOR:
            x_np = rng.standard_normal((64, cin, size, size)).astype(np.float32)
            steps = {}
            for name, T in (("scriptc", scriptc), ("torch", torch)):
                if T is None:
                    continue
                layer = T.nn.ConvTranspose2d(cin, cout, 4, stride, padding, bias=False)
                x = T.tensor(x_np, requires_grad=cin != 100)  # the first layer's input is the noise

                def step(layer=layer, x=x):
                    layer(x).sum().backward()
                steps[name] = step
            out = (size - 1) * stride - 2 * padding + 4
            rows.append((f"{cin}->{cout} {size}x{size}->{out}x{out}", timeit_interleaved(steps, min_time=1.0,
                                                                                         rounds=5)))
        if torch is not None:
            torch.set_num_threads(previous_threads)
    total = {name: sum(timings[name] for _, timings in rows) for name in rows[0][1]}
    return rows + [("whole generator (sum)", total)]


# pytorch/examples word_language_model defaults: emsize 650 = nhid 650, 2 layers, bptt 35, batch 20.
LSTM_SIZE = dict(input_size=650, hidden_size=650, num_layers=2)
LSTM_STEPS, LSTM_BATCH = 35, 20


def lstm_rows():
    """nn.LSTM forward + backward (input, weight and bias gradients), one thread each, interleaved."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((LSTM_STEPS, LSTM_BATCH, LSTM_SIZE["input_size"])).astype(np.float32)
    steps = {}
    previous_threads = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=1, user_api="blas"):
        if torch is not None:
            torch.set_num_threads(1)
        for name, T in (("scriptc", scriptc), ("torch", torch)):
            if T is None:
                continue
            layer = T.nn.LSTM(**LSTM_SIZE)
            x = T.tensor(x_np, requires_grad=True)

            def step(layer=layer, x=x):
                out, (h, c) = layer(x)
                (out.sum() + h.sum() + c.sum()).backward()
            steps[name] = step
        timings = timeit_interleaved(steps, min_time=2.0, rounds=5)
        if torch is not None:
            torch.set_num_threads(previous_threads)
    return [(f"LSTM 650x650x2, seq {LSTM_STEPS}, batch {LSTM_BATCH}", timings)]


def main():
    baseline = "torch" if torch is not None else "numpy"
    print(table("Per-op overhead on 10-element float32 tensors (time per call)", per_op_rows(), baseline))
    print()
    print(table("Training step: forward + backward + SGD(momentum) step", training_step_row(), baseline))
    print()
    print(table("ConvTranspose2d forward + backward, DCGAN generator, batch 64, one thread (noisy: shared machine)",
                conv_transpose_rows(), baseline))
    print()
    print(table("nn.LSTM forward + backward, word_language_model size, one thread (noisy: shared machine)",
                lstm_rows(), baseline))


if __name__ == "__main__":
    main()
