# Honest, for tasks/layernorm_offset.py: the two-pass layer normalisation
# written out in float32 (mean, then the mean square of the deviations,
# then rsqrt), another order of summation than torch's: ok on every kind of
# input, trials, timed calls and check calls alike.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        mean = x.sum(-1, keepdim=True) / self.n
        d = x - mean
        var = (d * d).sum(-1, keepdim=True) / self.n
        return d * torch.rsqrt(var + 1e-5)
