# A load_inline build that fails (a C++ syntax error): compile_error, and a
# second evaluation of the same file fails at once from kforge's record of
# failed builds.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
torch::Tensor relu_cpu(torch::Tensor x) { return x.clamp_min(0) }
"""

ext = load_inline(name="kforge_test_broken", cpp_sources=cpp_src,
                  functions=["relu_cpu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_cpu(x)
