# HONEST honest_inline_shfl_sum (level1/3_Sum_reduction): a load_inline CUDA
# kernel: sum over dim 1 of a (B, R, C) tensor, keepdim; one warp per output
# column group, warp-shuffle folds in a fixed order, on torch's current stream.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sum_dim1(const float *x, float *y, long B, long R, long C)
{
    long o = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (o >= B * C) return;
    long b = o / C, c = o % C;
    float s = 0.f;
    for (long r = lane; r < R; r += 32)
        s += x[(b * R + r) * C + c];
    for (int k = 16; k; k >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, k);
    if (lane == 0) y[o] = s;
}

torch::Tensor sum1(torch::Tensor x)
{
    x = x.contiguous();
    long B = x.size(0), R = x.size(1), C = x.size(2);
    auto y = torch::empty({B, 1, C}, x.options());
    long outs = B * C;
    int threads = 256;
    long blocks = (outs + 7) / 8;
    sum_dim1<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), B, R, C);
    return y;
}
"""
cpp_src = "torch::Tensor sum1(torch::Tensor x);"
ext = load_inline(name="a15_kb_sum1", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["sum1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if self.dim != 1 or x.dim() != 3 or x.dtype != torch.float32:
            return torch.sum(x, dim=self.dim, keepdim=True)
        return ext.sum1(x)
