# A KernelBench-format task written for kforge's tests: a linear layer,
# y = x W^T + b.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.fc = nn.Linear(k, n)

    def forward(self, x):
        return self.fc(x)


batch_size = 64
k = 256
n = 128


def get_inputs():
    return [torch.randn(batch_size, k)]


def get_init_inputs():
    return [k, n]
