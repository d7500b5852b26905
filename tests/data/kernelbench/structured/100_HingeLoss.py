# A KernelBench-style task written for kforge's tests (inputs with structure): the hinge
# loss of predictions against targets of -1 and +1.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 1024


def get_inputs():
    return [torch.randn(batch_size, 1),
            torch.randint(0, 2, (batch_size, 1)).float() * 2 - 1]


def get_init_inputs():
    return []
