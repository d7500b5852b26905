# A level-1 style KernelBench task written for kforge's tests: ReLU over
# 2M floats, 8 MiB in and out: outputs large enough that delivering them to
# the judge costs milliseconds where the runner pays for it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1 << 21)]


def get_init_inputs():
    return []
