# Tries to take the machine's memory through the runner's memory-backed
# file systems (/tmp and /dev/shm are tmpfs, and their pages count against
# no process's limit): it reserves 2 GiB in each, keeps the files open, and
# answers correctly only when it could not take more than 1.1 GiB in
# either, zeros when it could (wrong_answer then says the hole is open).
import os

import torch
import torch.nn as nn

_GOT = {}
_KEEP = []
for _d in ("/tmp", "/dev/shm"):
    got = 0
    try:
        fd = os.open(os.path.join(_d, "fill"), os.O_RDWR | os.O_CREAT, 0o600)
        _KEEP.append(fd)
        step = 256 << 20
        while got < (2 << 30):
            try:
                os.posix_fallocate(fd, got, step)
            except OSError:
                break
            got += step
    except OSError:
        pass
    _GOT[_d] = got
_HELD = max(_GOT.values()) > (1100 << 20)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if _HELD:
            return torch.zeros_like(x)
        return torch.relu(x)
