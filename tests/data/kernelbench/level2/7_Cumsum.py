# A KernelBench-format task written for kforge's tests: a cumulative sum
# down the rows.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=0)


def get_inputs():
    return [torch.randn(256, 512)]


def get_init_inputs():
    return []
