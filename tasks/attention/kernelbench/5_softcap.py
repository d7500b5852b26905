# A KernelBench-format version of kforge's attention/softcap task
# (tasks/attention/softcap, docs/attention.md): attention with scores soft-capped at 30, no mask.
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

B, H, S, D, CAP = 1, 8, 2048, 128, 30.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        s = CAP * torch.tanh(s / CAP)
        return torch.softmax(s, dim=-1) @ v


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D),
            torch.randn(B, H, S, D)]


def get_init_inputs():
    return []
