# A level-1 style KernelBench task written for kforge: a 3x3 convolution
# with padding 1 and a bias, 16 to 32 channels over a (16, 16, 64, 64)
# batch, its weights those of nn.Conv2d (which the bridge draws at random).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 16
out_channels = 32
kernel_size = 3
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
