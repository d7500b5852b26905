# At its first call, makes its process's replies 17 MiB of text that is not
# JSON (json.dumps replaced): the judge cannot read them; a failure of the
# candidate, not of kforge.
import json

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        json.dumps = lambda *a, **k: "x" * (17 << 20)
        return torch.relu(x)
