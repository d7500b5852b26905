# A KernelBench-format version of kforge's attention/paged_decode task
# (tasks/attention/paged_decode, docs/attention.md): decode over a paged KV cache with a block table.
# float32 throughout (KernelBench's convention, and what CPU torch runs);
# the forward is the naive computation: scores, mask, softmax, weighted sum.
import math

import torch
import torch.nn as nn

B, HKV, G, D, BS, NBLK, MAXB = 32, 8, 4, 128, 16, 4096, 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache, block_table, context_lens):
        B, H, D = q.shape
        BS, HKV = k_cache.shape[1], k_cache.shape[2]
        o = torch.empty_like(q)
        for b in range(B):
            n = int(context_lens[b])
            blocks = block_table[b, :(n + BS - 1) // BS].long()
            k = k_cache[blocks].reshape(-1, HKV, D)[:n]  # [n, HKV, D]
            v = v_cache[blocks].reshape(-1, HKV, D)[:n]
            k = k.repeat_interleave(H // HKV, dim=1).transpose(0, 1)
            v = v.repeat_interleave(H // HKV, dim=1).transpose(0, 1)
            s = (k @ q[b][:, :, None])[:, :, 0] / math.sqrt(D)  # [H, n]
            o[b] = (torch.softmax(s, dim=-1)[:, None, :] @ v)[:, 0]
        return o


def get_inputs():
    return [torch.randn(B, HKV * G, D), torch.randn(NBLK, BS, HKV, D),
            torch.randn(NBLK, BS, HKV, D),
            torch.randint(0, NBLK, (B, MAXB), dtype=torch.int32),
            torch.randint(1, BS * MAXB + 1, (B,), dtype=torch.int32)]


def get_init_inputs():
    return []
