# A level-1 style KernelBench task written for kforge: elementwise tanh over
# a (1536, 2048) matrix, 12 MiB in and 12 MiB out: memory-bound.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


batch_size = 1536
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
