# A level-1 style KernelBench task written for kforge: 2x2 max pooling with
# stride 2 over a (12, 64, 64, 64) batch, 12 MiB in, 3 MiB out.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x):
        return self.pool(x)


batch_size = 12
channels = 64
height = 64
width = 64
kernel_size = 2
stride = 2


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride]
