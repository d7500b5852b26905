# A KernelBench-style task written for kforge's tests (inputs with structure): the product
# of two upper-triangular matrices, upper-triangular itself.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(torch.matmul(A, B))


N = 128


def get_inputs():
    return [torch.triu(torch.randn(N, N)), torch.triu(torch.randn(N, N))]


def get_init_inputs():
    return []
