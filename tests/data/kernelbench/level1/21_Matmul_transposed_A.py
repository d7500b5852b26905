# A level-1 style KernelBench task written for kforge: C = A^T B with A
# given as (K, M), so the product reads its first operand transposed;
# M = N = 512, K = 1024, 0.54 GFLOP.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


M = 512
K = 1024
N = 512


def get_inputs():
    return [torch.randn(K, M), torch.randn(K, N)]


def get_init_inputs():
    return []
