"""Train a small MLP on synthetic data with `import scriptc as torch`, then print predictions."""

import scriptc as torch
import scriptc.nn as nn
import scriptc.nn.functional as F

torch.manual_seed(0)

# Two interleaved spirals: a problem a linear model cannot solve.
n = 256
t = torch.linspace(0, 3 * 3.14159, n)
labels = (torch.arange(n) % 2).long()
radius = t / t.max()
sign = labels.float() * 2 - 1
x = torch.stack([radius * torch.cos(t) * sign, radius * torch.sin(t) * sign], dim=1)
x = x + 0.02 * torch.randn(n, 2)

model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for step in range(301):
    loss = F.cross_entropy(model(x), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        with torch.no_grad():
            accuracy = (model(x).argmax(dim=1) == labels).float().mean().item()
        print(f"step {step:3d}  loss {loss.item():.4f}  accuracy {accuracy:.2f}")

model.eval()
with torch.no_grad():
    probe = x[:5]
    print("inputs:     ", probe)
    print("predictions:", model(probe).softmax(dim=1).argmax(dim=1).tolist())
    print("labels:     ", labels[:5].tolist())
