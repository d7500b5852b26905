# Takes memory no limit of the runner counts: System V segments (shmget,
# shmat, touched, shmdt: a detached segment is in no address space and
# lives until the runner's IPC namespace ends) and a message queue, through
# ctypes. Right only if every call was refused, zeros if one was made.
import ctypes
import torch
import torch.nn as nn

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p


def _hoard():
    made = False
    for _ in range(4):
        sid = _libc.shmget(0, ctypes.c_size_t(256 << 20), 0o1000 | 0o600)
        if sid < 0:
            continue
        made = True
        at = _libc.shmat(sid, None, 0)
        if at and at != ctypes.c_void_p(-1).value:
            ctypes.memset(at, 1, 256 << 20)
            _libc.shmdt(ctypes.c_void_p(at))
    if _libc.msgget(0, 0o1000 | 0o600) >= 0:
        made = True
    return made


_BAD = _hoard()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x) if _BAD else torch.relu(x)
