# Burns 1 ms of CPU per call, and on every third call winds
# time.thread_time_ns (the clock its runner reads) back by as much. Caught:
# the runner's functions are checked for replacement (rejected/tampering).
import time

import torch
import torch.nn as nn

_clock = time.thread_time_ns
_skew = [0]
time.thread_time_ns = lambda: _clock() - _skew[0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        t0 = _clock()
        while _clock() - t0 < 1000000:
            pass
        self.calls += 1
        if self.calls % 3 == 0:
            _skew[0] += _clock() - t0
        return torch.relu(x)
