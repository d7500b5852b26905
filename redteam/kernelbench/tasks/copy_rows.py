# A data-movement task for the red team: a copy of a 2 MiB input (512
# rows of 1024 floats), as clone, cat or a contiguous copy are. Its output
# is the input's values in memory of its own.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clone()


def get_inputs():
    return [torch.randn(512, 1024)]


def get_init_inputs():
    return []
