# Starts processes at import, each reaped as it goes (processes are allowed
# until the load ends: load_inline's builds start compilers): 1100 of them,
# through posix_spawn (vfork: cheap even beside torch). Right only if the
# sandbox refused the ones past its cap (EAGAIN, as past RLIMIT_NPROC);
# zeros if every one started (a fork bomb would take the machine's pids).
import os
import torch
import torch.nn as nn


def _spawns(n):
    made = 0
    for _ in range(n):
        try:
            pid = os.posix_spawn("/bin/true", ["true"], {})
        except OSError:
            break
        os.waitpid(pid, 0)
        made += 1
    return made


_BAD = _spawns(1100) >= 1100


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x) if _BAD else torch.relu(x)
