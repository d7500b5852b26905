# Fails in forward with a message holding lone UTF-16 surrogates, which
# Python's json writes as the escapes \ud800 and \udfff (a blind round made
# the engine refuse the frame: infra_error, the candidate's failure unpaid).
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        raise ValueError("\ud800 x \udfff")
