# Honest: LayerNorm as plain tensor arithmetic (no autograd, no
# torch.nn.functional), with the elementwise weight and bias.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.ln = nn.LayerNorm(shape)

    def forward(self, x):
        dims = tuple(range(x.dim() - self.ln.weight.dim(), x.dim()))
        mu = x.mean(dim=dims, keepdim=True)
        var = (x - mu).pow(2).mean(dim=dims, keepdim=True)
        y = (x - mu) * torch.rsqrt(var + self.ln.eps)
        return y * self.ln.weight + self.ln.bias
