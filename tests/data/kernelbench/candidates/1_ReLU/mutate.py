# Correct output, but it overwrites its input afterwards.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        x.zero_()
        return y
