# Honest: GroupNorm and the mean written out by hand. Both its outputs and
# the reference's are float noise around zero (about 1e-9); compared at the
# scale of the computation they agree.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        n, c, h, w = x.shape
        g = x.reshape(n, self.groups, -1)
        mu = g.mean(dim=2, keepdim=True)
        var = g.var(dim=2, unbiased=False, keepdim=True)
        y = (g - mu) / torch.sqrt(var + 1e-5)
        return y.reshape(n, -1).mean(dim=1)
