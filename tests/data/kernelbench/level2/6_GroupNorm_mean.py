# A KernelBench-format task written for kforge's tests whose outputs are
# float noise around zero: the mean over each sample of a GroupNorm without
# affine is exactly zero in real arithmetic, about 1e-9 in float32.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels, affine=False)

    def forward(self, x):
        return self.gn(x).mean(dim=(1, 2, 3))


batch_size = 16
channels = 8
groups = 4


def get_inputs():
    return [torch.randn(batch_size, channels, 16, 16)]


def get_init_inputs():
    return [groups, channels]
