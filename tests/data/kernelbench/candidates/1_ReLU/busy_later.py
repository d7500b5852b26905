# Correct, and from its 40th call on it keeps the GPU busy from a thread of
# its own between its calls, so that the reference, timed beside it, runs
# slower. The correctness trials see nothing of it.
import threading

import torch
import torch.nn as nn


def _burn():
    s = torch.cuda.Stream()
    a = torch.randn(4096, 4096, device="cuda")
    with torch.cuda.stream(s):
        while True:
            for _ in range(8):
                a = (a @ a).clamp_(-1.0, 1.0)
            s.synchronize()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 40:
            threading.Thread(target=_burn, daemon=True).start()
        return torch.clamp(x, min=0.0)
