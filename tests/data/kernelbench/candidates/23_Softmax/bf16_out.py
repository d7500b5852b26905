# Lower precision: its outputs rounded to bfloat16 (8 bits of mantissa),
# well within atol = 1e-2 because they are near 6e-5. Caught by the
# precision check at the reference's measured float noise (precision).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1).to(torch.bfloat16).to(torch.float32)
