# Raises an exception whose message is 40 MB: a failure of the candidate
# (runtime_error), whose reply must still fit in a frame.
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        raise RuntimeError("x" * (40 << 20))
