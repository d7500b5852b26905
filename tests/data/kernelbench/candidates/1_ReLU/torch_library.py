# ReLU as an operator of its own (TORCH_LIBRARY), compiled with g++ when the
# module is imported and loaded with torch.ops.load_library; forward calls
# torch.ops.kforge_test_lib.relu. A custom kernel: ok under
# --require-custom-kernel (an operator loaded this way was not counted at
# first, and this was rejected).
import os
import subprocess
import tempfile

import torch
import torch.nn as nn
from torch.utils import cpp_extension

SRC = r"""
#include <torch/library.h>
#include <torch/torch.h>

static torch::Tensor relu(const torch::Tensor &x)
{
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float *a = xc.data_ptr<float>();
    float *b = y.data_ptr<float>();
    for (int64_t i = 0, n = xc.numel(); i < n; i++)
        b[i] = a[i] > 0.f ? a[i] : 0.f;
    return y;
}

TORCH_LIBRARY(kforge_test_lib, m) { m.def("relu(Tensor x) -> Tensor", &relu); }
"""

_dir = os.environ.get("TORCH_EXTENSIONS_DIR") or tempfile.mkdtemp()
_so = os.path.join(_dir, "libkforge_test_lib.so")
if not os.path.exists(_so):
    src = os.path.join(_dir, "kforge_test_lib.cpp")
    with open(src, "w") as f:
        f.write(SRC)
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    inc = [a for p in cpp_extension.include_paths() for a in ("-I", p)]
    abi = "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI)
    subprocess.run(["g++", "-O2", "-std=c++17", "-shared", "-fPIC", abi] +
                   inc + ["-o", _so, src, "-L" + lib, "-ltorch",
                          "-ltorch_cpu", "-lc10"], check=True)
torch.ops.load_library(_so)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.ops.kforge_test_lib.relu(x)
