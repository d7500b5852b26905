# A level-1 style KernelBench task written for kforge: the mean over the
# middle dimension of a (48, 1024, 64) tensor, the dimension given at
# construction: a strided reduction over 12 MiB.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


batch_size = 48
dim1 = 1024
dim2 = 64
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
