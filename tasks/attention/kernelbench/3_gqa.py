# A KernelBench-format version of kforge's attention/gqa task
# (tasks/attention/gqa, docs/attention.md): grouped-query causal attention, four query heads per kv head.
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

B, HKV, G, S, D = 1, 4, 4, 2048, 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        g = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        n = q.shape[-2]
        i = torch.arange(n, device=q.device)
        s = s.masked_fill(i[None, :] > i[:, None], float("-inf"))
        return torch.softmax(s, dim=-1) @ v


def get_inputs():
    return [torch.randn(B, HKV * G, S, D), torch.randn(B, HKV, S, D),
            torch.randn(B, HKV, S, D)]


def get_init_inputs():
    return []
