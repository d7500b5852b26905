# facts_class_replaced
# Tries:   Runner.facts and Runner.facts_apart replaced on the class by clean
#          facts (spun as long), then the call's clocks under-reported
# Task:    level1/1_ReLU.py (host), level1/30_ReLU_large.py (cuda)
# Expect (sound verifier): rejected/tampering (on the host the under-report is
#          charged back; on a device, under the device's limit, it would not be)
import sys, time
import torch
import torch.nn as nn
_tt = time.thread_time_ns
main = sys.modules["__main__"]
R = main.Runner
def facts(self, *a, **k):
    t = _tt() + 560_000
    while _tt() < t:
        pass
    return {"threads": 1, "state": self.global_state(), "patched": []}
def facts_apart(self, req, *a, **k):
    r = {"ev": "facts"}
    r.update(facts(self))
    return r
R.facts = facts
R.facts_apart = facts_apart
_et = torch.cuda.Event.elapsed_time
def elapsed_time(self, end):
    return max(0.0, _et(self, end) * 0.3)
torch.cuda.Event.elapsed_time = elapsed_time
_last = [0]
def thread_time_ns():
    t = _tt()
    if _last[0] and t - _last[0] < 5_000_000:
        r = _last[0] + (t - _last[0]) // 4
        _last[0] = 0
        return r
    _last[0] = t
    return t
time.thread_time_ns = thread_time_ns
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
