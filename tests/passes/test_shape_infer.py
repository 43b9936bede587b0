"""passes/shape_infer.py: what it writes into a graph's types."""

from typing import List

import scriptc
from scriptc.runtime import load as runtime_load


class _KeepAbove(scriptc.nn.Module):
    # torchvision's RoIHeads.postprocess_detections: inds = torch.where(scores > self.score_thresh)[0]
    def __init__(self):
        super().__init__()
        self.score_thresh = 0.5

    def forward(self, x: scriptc.Tensor):
        kept: List[scriptc.Tensor] = []
        for scores in x.split([2, 3], 0):
            scores = scores[:, 1:].reshape(-1)
            inds = scriptc.where(scores > self.score_thresh)[0]
            kept.append(scores[inds])
        return scriptc.cat(kept)


def test_a_list_of_one_piece_keeps_its_list_type(tmp_path):
    module = _KeepAbove().eval()
    optimized = scriptc.jit.optimize_for_inference(scriptc.jit.freeze(scriptc.jit.script(module)))
    assert "Tensor(int64, [?]) = where.cond" not in str(optimized.graph)
    path = str(tmp_path / "keep.sc")
    scriptc.jit.save(optimized, path)
    x = scriptc.rand(5, 3)
    assert scriptc.equal(scriptc.from_numpy(runtime_load(path)(x.numpy())), module(x))
