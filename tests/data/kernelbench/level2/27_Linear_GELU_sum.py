# A level-2 style KernelBench task written for kforge: a small linear layer,
# GELU, then the sum of each row, (32, 256) x (256, 256)^T: a chain of three
# small calls.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.fc(x)).sum(dim=1, keepdim=True)


batch_size = 32
in_features = 256
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
