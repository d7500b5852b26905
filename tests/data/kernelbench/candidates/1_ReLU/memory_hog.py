# Holds 2 GiB of plain allocations (touched) from its forward: no process
# limit counts them (KernelBench runners have no RLIMIT_AS); the bridge's
# judge reads the runner's resident memory from outside and stops it past
# KFORGE_RUNNER_MEM_MB plus four times its tensors.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.keep = []

    def forward(self, x):
        for _ in range(8):
            self.keep.append(torch.ones(64 << 20))  # 256 MiB of float32
        return torch.relu(x)
