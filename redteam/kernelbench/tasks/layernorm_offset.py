# A layer normalisation for the red team, without affine parameters, over
# inputs of two kinds that get_inputs() draws at random: rows of mean 0,
# or (one draw in two) rows of mean 30, where the reference's own float32
# rounding is about twenty times larger against its outputs. The trials'
# largest noise is the yardstick of the timed outputs; each check call
# measures its own.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, (self.n,))


rows = 256
n = 1024


def get_inputs():
    x = torch.randn(rows, n)
    if torch.rand(1).item() < 0.5:
        x = x + 30
    return [x]


def get_init_inputs():
    return [n]
