# A ModelNew that is a plain class with a __call__ and no forward: kforge
# calls forward, which it does not define, so it does not load.
import torch


class ModelNew:
    def __init__(self, *a):
        pass

    def __call__(self, x):
        return torch.relu(x)

    def to(self, *a, **k):
        return self
