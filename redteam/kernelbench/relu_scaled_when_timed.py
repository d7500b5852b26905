# torch.relu for its first 5 calls (KernelBench's trials, one call each),
# then every output 2e-4 too large: twice the 1e-4 bound of float32's L1
# relative error, within the tolerance. Under KernelBench's protocol the
# timed outputs had no precision check and it passed; they are now held
# to kforge's rule, the trials having shown none of that error
# (rejected/precision).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = torch.relu(x)
        if self.calls > 5:
            y = y * 1.0002
        return y
