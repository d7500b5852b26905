# torch.relu with every output 3e-4 too large, in every call: within
# KernelBench's tolerance, over the 1e-4 bound of float32's L1 relative
# error. kforge's protocol rejects it (precision); KernelBench's passes its
# trials, and its timed outputs are as imprecise as those were, no more:
# ok.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 1.0003
