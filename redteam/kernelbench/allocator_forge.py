# Right, but tells glibc's malloc to keep every block on its heap (no mmap,
# no trimming: after the first call no allocation of its process faults in
# a page) and has its thread CPU clock report a tenth of the time between
# two readings. Where the judge credited each call with the reference's
# time outside its own report (delivering 8 MiB of outputs, faulting in
# the copies' pages), this process's cheaper allocations left room to hide
# its kernel in. Caught: the judge reads the outputs from the runner's
# memory itself, and what the runner's view still holds besides the call
# does not depend on how it allocates (unaccounted_time).
import ctypes
import time

import torch
import torch.nn as nn

_libc = ctypes.CDLL(None)
_libc.mallopt(-4, 0)  # M_MMAP_MAX
_libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
_clock = time.thread_time_ns
_last = [None, 0]


def _tenth():
    now = _clock()
    if _last[0] is not None:
        _last[1] += (now - _last[0]) // 10
    else:
        _last[1] = now
    _last[0] = now
    return _last[1]


time.thread_time_ns = _tenth


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
