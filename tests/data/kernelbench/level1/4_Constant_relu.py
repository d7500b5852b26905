# A KernelBench-format task written for kforge's tests whose reference
# output is constant: ReLU of values that are never positive is all zeros,
# so a candidate that ignores its input passes every check.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(-torch.abs(x))


def get_inputs():
    return [torch.randn(8, 512)]


def get_init_inputs():
    return []
