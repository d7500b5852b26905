# Right output, then zeroes its input. Caught: the judge hashes the inputs
# as the runner sends them back after the call (input_mutation).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.relu(x)
        x.zero_()
        return y
