# Honest: the copy task's copy, made by torch into memory of its own.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.contiguous().clone()
