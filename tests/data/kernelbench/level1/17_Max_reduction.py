# A level-1 style KernelBench task written for kforge: the largest value
# over the last dimension of a (16, 256, 256) tensor (values only), a small
# reduction.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim).values


batch_size = 16
dim1 = 256
dim2 = 256
reduce_dim = 2


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
