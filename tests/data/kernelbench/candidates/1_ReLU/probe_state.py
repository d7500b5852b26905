# Honest ReLU that first looks for what leave_state.py leaves behind: a
# changed flag, a patched torch.clamp, its files. Raises if it finds any.
import os

import torch
import torch.nn as nn

found = []
if not torch.backends.mkldnn.enabled:
    found.append("torch.backends.mkldnn.enabled is False")
if getattr(torch.clamp, "__name__", "") == "<lambda>":
    found.append("torch.clamp is patched")
for d in ("/tmp", os.environ.get("TORCH_EXTENSIONS_DIR") or "/tmp"):
    if os.path.exists(os.path.join(d, "kforge-left-behind")):
        found.append("%s/kforge-left-behind exists" % d)
if found:
    raise RuntimeError("left behind by an earlier candidate: " +
                       "; ".join(found))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0.0)
