# A ModelNew whose class replaces nn.Module.__call__ with a function that
# answers zeros; its forward is correct. kforge calls forward on both sides
# (a __call__ of its own is not called), so it is correct, and it gains
# nothing by skipping nn.Module's dispatch.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


ModelNew.__call__ = lambda self, x: torch.zeros_like(x)
