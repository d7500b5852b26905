# Forks a helper at import, before the runner forbids new processes, and
# hides its pid from what the runner's own process lists (os.listdir and
# os.scandir of /proc filtered). The helper could do the work outside the
# runner's CPU clock. Caught: the judge lists the sandbox's processes from
# outside (rejected/processes).
import os
import time

import torch
import torch.nn as nn

_pid = os.fork()
if _pid == 0:
    while True:
        time.sleep(1)

_listdir, _scandir = os.listdir, os.scandir


def _hide(names):
    return [n for n in names if str(n) != str(_pid)]


os.listdir = lambda p=".": _hide(_listdir(p))
os.scandir = lambda p=".": iter([e for e in _scandir(p)
                                 if e.name != str(_pid)])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
