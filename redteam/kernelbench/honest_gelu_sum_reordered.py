# Honest: a linear layer, GELU and a row sum, each in another float32
# order: the product as two half-width products over K added, GELU
# written out with erf, the row sum as a running sum. Its error is a small
# multiple of the reference's own float32 rounding, and must stay ok.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.fc.weight
        k = x.shape[1] // 2
        y = x[:, :k] @ w[:, :k].t() + x[:, k:] @ w[:, k:].t() + self.fc.bias
        g = 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))
        return torch.cumsum(g, dim=1)[:, -1:]
