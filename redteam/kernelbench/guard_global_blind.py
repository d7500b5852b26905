# guard_global_blind
# Tries:   the runner's Guard replaced by its module name (an object whose check
#          finds nothing, spun as long as the real one), then the call's clocks
#          under-reported (thread time by 3/4 on the host, events by 70% on CUDA)
# Task:    level1/1_ReLU.py (host), level1/30_ReLU_large.py (cuda)
# Expect (sound verifier): rejected/tampering (on the host the under-report is
#          charged back; on a device, under the device's limit, it would not be)
import sys, time
import torch
import torch.nn as nn

main = sys.modules["__main__"]
_tt0 = time.thread_time_ns


class _Blind:
    def changed(self, *a, **k):
        t = _tt0() + 560_000
        while _tt0() < t:
            pass
        return []

    def __getattr__(self, k):
        return lambda *a, **kw: None


main.GUARD = _Blind()
if hasattr(torch.cuda, "Event"):
    _et = torch.cuda.Event.elapsed_time

    def elapsed_time(self, end):
        return max(0.0, _et(self, end) * 0.3)
    torch.cuda.Event.elapsed_time = elapsed_time
_tt = time.thread_time_ns
_last = [0]


def thread_time_ns():
    t = _tt()
    # the second reading of a pair (the call's end): most of the gap hidden
    if _last[0] and t - _last[0] < 5_000_000:
        r = _last[0] + (t - _last[0]) // 4
        _last[0] = 0
        return r
    _last[0] = t
    return t


time.thread_time_ns = thread_time_ns


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
