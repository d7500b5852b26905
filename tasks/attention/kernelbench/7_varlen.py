# A KernelBench-format version of kforge's attention/varlen task
# (tasks/attention/varlen, docs/attention.md): causal attention over packed sequences of lengths lens (padding rows 0).
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

NB, H, S, D = 8, 16, 2048, 64

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, lens):
        o = torch.zeros_like(q)
        start = 0
        for n in lens.tolist():
            qs = q[start:start + n].transpose(0, 1)  # [H, n, D]
            ks = k[start:start + n].transpose(0, 1)
            vs = v[start:start + n].transpose(0, 1)
            s = qs @ ks.transpose(-2, -1) / math.sqrt(q.shape[-1])
            i = torch.arange(n, device=q.device)
            s = s.masked_fill(i[None, :] > i[:, None], float("-inf"))
            o[start:start + n] = (torch.softmax(s, dim=-1) @ vs).transpose(0, 1)
            start += n
        return o


def get_inputs():
    return [torch.randn(NB * S, H, D), torch.randn(NB * S, H, D),
            torch.randn(NB * S, H, D),
            torch.randint(1, S + 1, (NB,), dtype=torch.int32)]


def get_init_inputs():
    return []
