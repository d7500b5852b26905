# A level-2 style KernelBench task written for kforge: a 3x3 convolution
# without bias, BatchNorm in inference mode (its running statistics and
# affine drawn at random by the bridge) and a ReLU, the block that fused
# conv kernels fold into one: 32 to 64 channels over (8, 32, 32, 32).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1,
                              bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


batch_size = 8
in_channels = 32
out_channels = 64
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
