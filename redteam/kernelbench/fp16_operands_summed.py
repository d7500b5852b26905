# A linear layer, GELU and a row sum with both operands of the product
# rounded to float16 (accumulated in float32), as a tensor-core kernel
# would take them. The row sum averages the rounding errors: the output is
# off by 3e-5 to 1.5e-4 of its norm, under the float32 bound of 1e-4 in
# most draws, yet 600 to 1000 times the reference's own float32 rounding
# on the same inputs. Caught by that ratio (rejected/precision).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.fc.weight.half().float()
        y = torch.addmm(self.fc.bias, x.half().float(), w.t())
        return F.gelu(y).sum(dim=1, keepdim=True)
