# A level-1 style KernelBench task written for kforge: leaky ReLU with a
# negative slope given at construction (0.2), over 256K floats: a small
# call.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 256
dim = 1024
negative_slope = 0.2


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [negative_slope]
