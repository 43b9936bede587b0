import scriptc as torch
from scriptc import nn
class M(nn.Module):
    def forward(self, x, y):
        return ((x > 0) - (y > 0)).float() * 2 + x
s = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(M().eval())))
print(s.graph)
