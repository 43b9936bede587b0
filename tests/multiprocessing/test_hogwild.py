"""Hogwild training as pytorch/examples' mnist_hogwild does it: processes share one model
(model.share_memory()) and each runs SGD on it; the shared model learns."""

from __future__ import annotations

import numpy as np

import scriptc as torch
import scriptc.multiprocessing as mp
import scriptc.nn as nn
import scriptc.nn.functional as F
import scriptc.optim as optim
from scriptc.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def _dataset(seed: int) -> TensorDataset:
    """Three Gaussian blobs in 8 dimensions."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, 600)
    centers = np.eye(3, 8, dtype=np.float32) * 4
    points = centers[labels] + rng.standard_normal((600, 8)).astype(np.float32)
    return TensorDataset(torch.from_numpy(points), torch.from_numpy(labels))


def train(rank, model, steps_taken, epochs):
    """The example's train(): seed by rank, SGD with momentum on the shared model."""
    torch.manual_seed(1 + rank)
    loader = DataLoader(_dataset(rank), batch_size=32, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    model.train()
    for _ in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            F.nll_loss(model(data), target).backward()
            optimizer.step()
            steps_taken[rank] += 1


def _loss_and_accuracy(model) -> tuple[float, float]:
    data, target = _dataset(99).tensors
    with torch.no_grad():
        output = model(data)
    return F.nll_loss(output, target).item(), (output.argmax(1) == target).float().mean().item()


def test_hogwild_processes_train_one_shared_model():
    torch.manual_seed(1)
    model = Net()
    model.share_memory()
    steps_taken = torch.zeros(2, dtype=torch.int64).share_memory_()
    initial_loss, _ = _loss_and_accuracy(model)
    ctx = mp.get_context("spawn")  # the example's start method
    processes = [ctx.Process(target=train, args=(rank, model, steps_taken, 3)) for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
    assert [p.exitcode for p in processes] == [0, 0]
    assert steps_taken.tolist() == [57, 57], "both processes trained"
    loss, accuracy = _loss_and_accuracy(model)
    assert loss < initial_loss / 4 and accuracy > 0.95, (initial_loss, loss, accuracy)
