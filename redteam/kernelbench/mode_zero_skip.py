# mode_zero_skip
# Tries:   a TorchFunctionMode entered at import and never left (global for the whole
#          runner process): every torch call of the runner goes through it; it turns a
#          Tensor.zero_ of 64 MiB or more (the runner's L2 flush) into a ~25 us spin and
#          passes everything else through.  No recorded function is replaced.
# Task:    level1/30_ReLU_large.py
# Backend: host (the mode is active; shows whether it is seen), cuda
# Expect (sound verifier): rejected, or ok at ~1.0x
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

BIG = 64 << 20


class _SkipFlush(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, '__name__', '') == 'zero_' and args and isinstance(args[0], torch.Tensor):
            t = args[0]
            if t.is_cuda and t.numel() * t.element_size() >= BIG:
                torch.cuda._sleep(50000)
                return t
        return func(*args, **kwargs)


_mode = _SkipFlush()
_mode.__enter__()          # never exited


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
