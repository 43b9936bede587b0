"""AdaptiveLogSoftmaxWithLoss (torch.nn): a softmax over many classes split into a frequent head and
rarer clusters, each cluster reached through one head entry and scored by its own smaller projection."""

from __future__ import annotations

from collections import namedtuple
from typing import Sequence

from scriptc.tensors import Tensor

from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Classes below cutoffs[0] are scored by the head; each further range [cutoffs[i], cutoffs[i+1]) by a
    tail projection of in_features // div_value**(i+1) features, weighted by its head entry."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype, device=device)
        self.tail = ModuleList([
            Sequential(Linear(in_features, int(in_features // (div_value ** (i + 1))), bias=False, dtype=dtype,
                              device=device),
                       Linear(int(in_features // (div_value ** (i + 1))), self.cutoffs[i + 1] - self.cutoffs[i],
                              bias=False, dtype=dtype, device=device))
            for i in range(self.n_clusters)])

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """(output, loss): each target's log-probability, and their negated mean."""
        import scriptc

        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (bool((target < 0).any()) or bool((target >= self.n_classes).any())):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        # cluster 0 is the head's shortlist; cluster i > 0 is tail[i - 1]
        cluster = scriptc.bucketize(target, scriptc.tensor(self.cutoffs[:-1]), right=True)
        output = input.new_zeros(target.size(0))
        for i in range(1, self.n_clusters + 1):
            rows = (cluster == i).nonzero().flatten()
            if rows.numel() == 0:
                continue
            scores = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            relative = target.index_select(0, rows) - self.cutoffs[i - 1]
            output = output.index_copy(0, rows, scores.gather(1, relative.unsqueeze(1)).squeeze(1))
        head_entry = scriptc.where(cluster == 0, target, self.shortlist_size + cluster - 1)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_entry.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, (N, n_classes)."""
        import scriptc

        head_logprob = F.log_softmax(self.head(input), dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            pieces.append(F.log_softmax(projection(input), dim=1)
                          + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return scriptc.cat(pieces, dim=1)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each example."""
        return self.log_prob(input).argmax(dim=1)
