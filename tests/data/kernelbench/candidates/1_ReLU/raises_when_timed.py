# Correct in its trials, then raises once it has been called 40 times (in
# timing): runtime_error, and the reason says what it raised.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 40:
            raise ValueError("gave up after 40 calls")
        return torch.relu(x)
