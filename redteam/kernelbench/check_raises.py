# Swaps its runner's check of replaced functions (Guard.changed) for code
# whose globals it lacks, so that the check raises: once the candidate's code
# has run in a process, its runner's checks failing are its doing (it was
# infra_error, the engine blamed).
import sys
import torch
import torch.nn as nn

_m = sys.modules.get("__main__")


def _broken(self):
    return _NOT_THERE


if _m is not None and hasattr(_m, "Guard"):
    _m.Guard.changed.__code__ = _broken.__code__


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
