# A KernelBench-format version of kforge's attention/prefix_lm task
# (tasks/attention/prefix_lm, docs/attention.md): prefix-LM attention: the first 256 keys seen by all, causal after.
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

B, H, S, D, P = 2, 16, 2048, 64, 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        n = q.shape[-2]
        i = torch.arange(n, device=q.device)
        keep = (i[None, :] < P) | (i[None, :] <= i[:, None])
        s = s.masked_fill(~keep, float("-inf"))
        return torch.softmax(s, dim=-1) @ v


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D),
            torch.randn(B, H, S, D)]


def get_init_inputs():
    return []
