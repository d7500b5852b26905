# Returns zeros and sends itself SIGXCPU, the signal of the CPU-time limit,
# in its first call: the verdict must follow the CPU time used, not the
# signal's name.
import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGXCPU)
        return torch.zeros_like(x)
