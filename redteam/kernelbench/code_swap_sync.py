# code_swap_sync
# Tries:   swaps the code object of torch.cuda.synchronize (a recorded function; the
#          object stays the same) for one that does nothing, so the whole-device join
#          inside the timed window (and the side-stream check's join) no longer waits
#          for other streams; every call then leaves a ~20 us spin on a private side
#          stream, unjoined, to show whether side-stream work escapes the window.
#          On host: shows whether the Guard sees a code swap of torch.cuda.synchronize.
# Task:    level1/30_ReLU_large.py
# Backend: host, cuda
# Expect (sound verifier): rejected (tampering or side_stream)
import torch
import torch.nn as nn

_sync = torch.cuda.synchronize


def _noop(device=None):
    return None


_sync.__code__ = _noop.__code__.replace(co_name=_sync.__code__.co_name) if hasattr(_noop.__code__, 'replace') else _noop.__code__
_side = []


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        if x.is_cuda:
            if not _side:
                _side.append(torch.cuda.Stream())
            s = _side[0]
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                torch.cuda._sleep(40000)      # ~20 us of device time left behind
        return y
