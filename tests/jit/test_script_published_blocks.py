"""Blocks as published code writes them (BERT's self-attention, T5's relative position bias, RAFT's
convex upsampling with F.unfold), written once against `T`: torch.jit.script and ours script them, and with torch's
weights loaded both give the same results, as does our frozen, optimized script."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scriptc

from ..nn.differential import build_pair

torch = pytest.importorskip("torch")


def bert_self_attention(T):
    nn = T.nn

    class SelfAttention(nn.Module):
        def __init__(self, hidden: int = 8, heads: int = 2):
            super().__init__()
            self.heads, self.head_size = heads, hidden // heads
            self.query, self.key, self.value = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)

        def transpose_for_scores(self, x):
            # a size list plus a tuple literal: TorchScript takes the tuple as the list add.t expects
            return x.view(x.size()[:-1] + (self.heads, self.head_size)).permute(0, 2, 1, 3)

        def forward(self, x):
            q = self.transpose_for_scores(self.query(x))
            k = self.transpose_for_scores(self.key(x))
            v = self.transpose_for_scores(self.value(x))
            scores = T.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
            context = T.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
            return context.view(context.size()[:-2] + (self.heads * self.head_size,))

    return SelfAttention()


def t5_relative_bias(T):
    nn = T.nn

    class RelativeBias(nn.Module):
        def __init__(self, buckets: int = 8, heads: int = 2):
            super().__init__()
            self.buckets = buckets
            self.bias = nn.Embedding(buckets, heads)

        @staticmethod
        def bucket(relative, buckets: int, max_distance: int = 16):
            # called as self.bucket(...): a static method of the module
            half = buckets // 2
            result = (relative > 0).to(T.long) * half
            relative = T.abs(relative)
            exact = half // 2
            large = exact + (T.log(relative.float() / exact) / math.log(max_distance / exact)
                             * (half - exact)).to(T.long)
            large = T.min(large, T.full_like(large, half - 1))
            return result + T.where(relative < exact, relative, large)

        def forward(self, x):
            length = x.size(1)
            positions = T.arange(length, dtype=T.long)
            relative = positions[None, :] - positions[:, None]
            return x.unsqueeze(1) + self.bias(self.bucket(relative, self.buckets)).permute([2, 0, 1]).unsqueeze(0)

    return RelativeBias()


def raft_upsample_flow(T):
    nn, F = T.nn, T.nn.functional

    class UpsampleFlow(nn.Module):
        """RAFT's convex upsampling: each coarse flow's 3x3 neighbourhood (F.unfold) weighted by a mask."""

        def __init__(self, factor: int = 2):
            super().__init__()
            self.factor = factor
            self.mask = nn.Conv2d(2, 9 * factor * factor, 1)

        def forward(self, flow):
            batch, channels, h, w = flow.shape
            mask = self.mask(flow).view(batch, 1, 9, self.factor, self.factor, h, w).softmax(dim=2)
            neighbours = F.unfold(self.factor * flow, kernel_size=3, padding=1).view(batch, channels, 9, 1, 1, h, w)
            up = (mask * neighbours).sum(dim=2).permute(0, 1, 4, 2, 5, 3)
            return up.reshape(batch, channels, self.factor * h, self.factor * w)

    return UpsampleFlow()


@pytest.mark.parametrize("build, shape", [(bert_self_attention, (2, 5, 8)), (t5_relative_bias, (2, 6, 6)),
                                          (raft_upsample_flow, (2, 2, 4, 5))])
def test_a_published_block_scripts_as_torch_scripts_it(build, shape):
    ours, theirs = build_pair(torch, build, "float32")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = torch.jit.script(theirs.eval())(torch.from_numpy(x)).detach().numpy()
    scripted = scriptc.jit.script(ours.eval())
    np.testing.assert_allclose(scripted(scriptc.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
    fast = scriptc.jit.optimize_for_inference(scriptc.jit.freeze(scripted))
    np.testing.assert_allclose(fast(scriptc.from_numpy(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)
