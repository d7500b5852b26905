# honest_numpy_relu (a held-out attack of the nineteenth round, written blind)
# Task:    level1/1_ReLU.py
# Expect (sound verifier): ok
# HONEST: ReLU computed by NumPy (np.maximum on a zero-copy view of the
# input into a fresh array), wrapped back with torch.from_numpy.
import numpy as np, torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        a = x.detach().numpy()
        return torch.from_numpy(np.maximum(a, np.float32(0)))
