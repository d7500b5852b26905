# Leaves what it can behind for whoever comes after it in its process or
# its sandbox: torch's mkldnn flag off, torch.clamp returning zeros, a file
# in /tmp and one in its build directory. Rejected (global_state); a later
# candidate must find none of it (probe_state.py).
import os

import torch
import torch.nn as nn

torch.backends.mkldnn.enabled = False
_clamp = torch.clamp
torch.clamp = lambda x, *a, **k: torch.zeros_like(x)
for d in ("/tmp", os.environ.get("TORCH_EXTENSIONS_DIR") or "/tmp"):
    try:
        with open(os.path.join(d, "kforge-left-behind"), "w") as f:
            f.write("left by leave_state.py\n")
    except OSError:
        pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _clamp(x, min=0.0)
