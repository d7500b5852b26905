# A level-2 style KernelBench task written for kforge: a linear layer, a
# ReLU and a multiplication by a constant given at construction, the chain
# a fused kernel does in one pass: (256, 1024) x (1024, 1024)^T, 0.54 GFLOP.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.scale


batch_size = 256
in_features = 1024
out_features = 1024
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
