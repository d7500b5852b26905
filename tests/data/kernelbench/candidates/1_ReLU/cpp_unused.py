# Builds a C++ ReLU with torch's load_inline but never calls it: forward is
# PyTorch's own relu. Correct, and rejected no_custom_kernel under
# --require-custom-kernel (the build alone is not a custom kernel).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>

torch::Tensor relu_cpu(torch::Tensor x)
{
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float *a = xc.data_ptr<float>();
    float *b = y.data_ptr<float>();
    long n = xc.numel();
    for (long i = 0; i < n; i++)
        b[i] = a[i] > 0.f ? a[i] : 0.f;
    return y;
}
"""

relu_ext = load_inline(name="kforge_test_relu_cpu", cpp_sources=cpp_src,
                       functions=["relu_cpu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = relu_ext

    def forward(self, x):
        return torch.relu(x)
