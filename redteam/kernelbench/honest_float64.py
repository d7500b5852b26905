# Honest: the product accumulated in float64 and rounded to float32, more
# precise than the reference.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return (A.double() @ B.double()).float()
