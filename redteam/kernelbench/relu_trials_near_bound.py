# kb_relu_trials_near_bound (1_ReLU, --protocol kernelbench).
# Under KernelBench's protocol the bridge places no check calls, and a timed output may be up to
# 10 times as imprecise as the trials were. This candidate is slightly imprecise in its first calls
# (x(1+2.4e-5): under the 2.5e-5 floor, so the trials pass kforge's rule too) and 9 times more
# imprecise afterwards (x(1+2.2e-4): over the 1e-4 bound). Expected: rejected/precision.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        s = 1.0 + (2.4e-5 if self.calls <= 12 else 2.2e-4)
        return torch.relu(x) * s
