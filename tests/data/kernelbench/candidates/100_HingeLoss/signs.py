# Honest: the targets are -1 or +1, so predictions * targets is the
# prediction with its sign flipped where the target is negative.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        m = torch.where(targets > 0, predictions, -predictions)
        return torch.mean(torch.clamp(1 - m, min=0))
