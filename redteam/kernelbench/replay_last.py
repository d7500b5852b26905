# After KernelBench's five checking trials, returns the output of the last
# call it computed: right only where every timed call gets the same input.
# Caught by comparing every timed call on fresh inputs (timed_output).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x):
        self.calls += 1
        if self.calls > 6 and self.last is not None:
            return self.last.clone()
        self.last = torch.relu(x)
        return self.last
