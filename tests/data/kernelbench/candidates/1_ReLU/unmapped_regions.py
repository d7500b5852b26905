# At its first call, makes its process's replies name memory it does not
# have as its outputs' (json.dumps rewritten): the judge reads the outputs
# from the runner's memory itself and finds nothing there; a failure of the
# candidate, not of kforge.
import json

import torch
import torch.nn as nn

_dumps = json.dumps


def _unmapped(obj, *a, **k):
    if isinstance(obj, dict) and "regions" in obj:
        obj = dict(obj, regions=[[4096, n] for _, n in obj["regions"]])
    return _dumps(obj, *a, **k)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        json.dumps = _unmapped
        return torch.relu(x)
