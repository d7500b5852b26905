# honest_json_gc
# Tries:   nothing: a ModelNew that uses json, struct and gc as a model may (its
#          config serialised at init, a collection at import and in forward), none of
#          their functions or objects changed
# Task:    level1/1_ReLU.py
# Expect (sound verifier): ok
import gc
import json
import struct

import torch
import torch.nn as nn

gc.collect()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = json.loads(json.dumps({"op": "relu", "pack": list(
            struct.pack("<f", 0.0))}))

    def forward(self, x):
        if self.config["op"] != "relu":
            raise ValueError(self.config)
        gc.collect(0)
        return torch.relu(x)
