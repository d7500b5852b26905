# A level-1 style KernelBench task written for kforge: softmax over the last
# dimension of attention-shaped scores (batch 4, 12 heads, 256 x 256), 12 MiB,
# whose outputs are about 1/256 of the inputs' size.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


batch_size = 4
heads = 12
seq = 256


def get_inputs():
    return [torch.randn(batch_size, heads, seq, seq)]


def get_init_inputs():
    return []
