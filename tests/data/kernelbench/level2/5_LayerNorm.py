# A level-2 style KernelBench task written for kforge's tests: LayerNorm
# over (C, H, W) with its elementwise affine, whose default init (weight 1,
# bias 0) the bridge replaces with random values.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.ln = nn.LayerNorm(shape)

    def forward(self, x):
        return self.ln(x)


batch_size = 8
shape = (4, 16, 16)


def get_inputs():
    return [torch.randn(batch_size, *shape)]


def get_init_inputs():
    return [shape]
