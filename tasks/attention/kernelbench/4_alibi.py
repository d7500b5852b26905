# A KernelBench-format version of kforge's attention/alibi task
# (tasks/attention/alibi, docs/attention.md): causal attention with ALiBi, slope 2^(-8 (h+1) / H).
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

B, H, S, D = 2, 16, 2048, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        H, n = q.shape[1], q.shape[-2]
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        i = torch.arange(n, device=q.device)
        h = torch.arange(H, device=q.device, dtype=torch.float32)
        slope = torch.exp2(-8.0 * (h + 1) / H)
        dist = (i[:, None] - i[None, :]).float()
        s = s - slope[:, None, None] * dist
        s = s.masked_fill(i[None, :] > i[:, None], float("-inf"))
        return torch.softmax(s, dim=-1) @ v


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D),
            torch.randn(B, H, S, D)]


def get_init_inputs():
    return []
