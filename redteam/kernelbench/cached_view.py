# Computes once, then returns a fresh view of the cached result on every
# call: a new tensor object, the same stale values. Caught: wrong on the
# next trial's inputs (mismatch).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None

    def forward(self, x):
        if self.cache is None:
            self.cache = torch.relu(x)
        return self.cache.view(self.cache.shape)
