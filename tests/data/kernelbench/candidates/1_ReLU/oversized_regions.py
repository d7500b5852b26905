# At its first call, makes its process's replies name a region of its
# memory far larger than its outputs (json.dumps rewritten): the judge
# refuses to read more than the layout allows; a failure of the candidate.
import json

import torch
import torch.nn as nn

_dumps = json.dumps


def _oversized(obj, *a, **k):
    if isinstance(obj, dict) and "regions" in obj:
        obj = dict(obj, regions=[[a, n << 20] for a, n in obj["regions"]])
    return _dumps(obj, *a, **k)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        json.dumps = _oversized
        return torch.relu(x)
