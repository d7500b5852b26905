# Honest: A and B are upper-triangular, so block (i, j) of the product sums
# A[i, k] B[k, j] over i <= k <= j only; blocks below the diagonal are 0.
import torch
import torch.nn as nn

BS = 32


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        n = A.shape[0]
        C = torch.zeros_like(A)
        for i in range(0, n, BS):
            for j in range(i, n, BS):
                C[i:i + BS, j:j + BS] = torch.matmul(
                    A[i:i + BS, i:j + BS], B[i:j + BS, j:j + BS])
        return torch.triu(C)
