# A load_inline build that fails, caught: the candidate falls back to
# PyTorch's relu. Correct, and reported with build_failed.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
torch::Tensor relu_cpu(torch::Tensor x) { return x.clamp_min(0) }
"""

try:
    ext = load_inline(name="kforge_test_fallback", cpp_sources=cpp_src,
                      functions=["relu_cpu"], verbose=False)
except Exception:
    ext = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_cpu(x) if ext is not None else torch.relu(x)
