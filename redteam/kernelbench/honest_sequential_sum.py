# Honest: the sum over a dimension as the last entry of a running sum
# (float32, strictly sequential), a different order from torch.sum's
# blocked one; its rounding differs from the reference's by a small
# multiple of the reference's own, and must stay ok.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim).narrow(
            self.dim, x.shape[self.dim] - 1, 1)
