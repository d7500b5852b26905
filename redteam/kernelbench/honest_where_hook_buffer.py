# honest_where_hook_buffer (a held-out case of the twentieth round, written blind)
# Task:    level1/1_ReLU.py
# Expect (sound verifier): ok
# HONEST: torch.where(x > 0, x, 0-buffer) with a registered (unused) forward hook and a buffer
# the reference lacks (left as ModelNew made it: parameters.unmatched).
import sys, torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(lambda m, i, o: None)
        self.register_buffer('zero', torch.zeros(()))
    def forward(self, x):
        return torch.where(x > 0, x, self.zero)
