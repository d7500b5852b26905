# A level-1 style KernelBench task written for kforge: a batched matrix
# product, (16, 256, 256) x (16, 256, 256), 0.54 GFLOP.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


batch_size = 16
m = 256
k = 256
n = 256


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
