# lib_zero_override
# Tries:   defeats the flush through the dispatcher, not Python: torch.library overrides
#          aten::zero_ (and aten::fill_.Scalar) for the CUDA key in the candidate's
#          process.  A zero_ of 64 MiB or more (the runner's 256 MiB L2 flush) becomes a
#          ~25 us spin kernel that touches no memory; every other zero_/fill_ is done
#          honestly (through aten::fill_.Tensor, a different kernel).  The Guard looks
#          at Python objects; the dispatcher table is not one of them.
# Task:    level1/30_ReLU_large.py
# Backend: host (registration only; shows whether it is seen), cuda
# Expect (sound verifier): rejected, or ok at ~1.0x
import torch
import torch.nn as nn

BIG = 64 << 20
_lib = torch.library.Library("aten", "IMPL")


def _zero_(self):
    if self.numel() * self.element_size() >= BIG:
        torch.cuda._sleep(50000)
        return self
    return torch.ops.aten.fill_.Tensor(self, torch.zeros((), dtype=self.dtype, device=self.device))


def _fill_scalar(self, value):
    if value == 0 and self.numel() * self.element_size() >= BIG:
        torch.cuda._sleep(50000)
        return self
    return torch.ops.aten.fill_.Tensor(self, torch.full((), value, dtype=self.dtype, device=self.device))


_lib.impl("zero_", _zero_, "CUDA")
_lib.impl("fill_.Scalar", _fill_scalar, "CUDA")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
