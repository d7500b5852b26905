# Tries to take memory through /dev (a memory file system bwrap makes) and
# a memfd past 1 GiB: right only if both were refused, zeros if not.
import os
import torch
import torch.nn as nn

def _try(fn):
    try:
        return fn()
    except OSError:
        return 0

def _dev():
    with open("/dev/fill", "wb") as f:
        f.write(b"\0" * (8 << 20))
    return 8 << 20

def _memfd():
    fd = os.memfd_create("x")
    os.ftruncate(fd, 0)
    n = 0
    try:
        os.posix_fallocate(fd, 0, (1 << 30) + (64 << 20))
        n = (1 << 30) + (64 << 20)
    except OSError:
        pass
    os.close(fd)
    return n

_BAD = _try(_dev) > 0 or _try(_memfd) > (1 << 30)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x) if _BAD else torch.relu(x)
