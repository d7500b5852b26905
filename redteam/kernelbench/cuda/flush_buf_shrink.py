# flush_buf_shrink
# Tries:   defeats the runner's L2 flush without touching any function: the runner's
#          Torch helper creates its 256 MiB flush buffer lazily (`if not hasattr(self,
#          'flush_buf')`), so the candidate, at import, plants a 16-element buffer in that
#          *data attribute* (found by gc).  The runner then "flushes" 64 bytes: the staged
#          inputs stay in the L2 and the flush's device time leaves the judge's view.
#          No function is replaced, shadowed or swapped.
# Task:    level1/30_ReLU_large.py
# Backend: host (no flush buffer there: shows only that it loads), cuda
# Expect (sound verifier): rejected, or ok at ~1.0x
import gc
import sys
import torch
import torch.nn as nn


def _plant():
    main = sys.modules.get('__main__')
    T = getattr(main, 'Torch', None)
    for o in gc.get_objects():
        if T is not None and type(o) is T:
            dev = getattr(o, 'dev', None)
            if getattr(o, 'cuda', False) and torch.cuda.is_available():
                o.flush_buf = torch.empty(16, dtype=torch.int32, device=dev or 'cuda')
            else:
                # already made? shrink it in place
                b = getattr(o, 'flush_buf', None)
                if isinstance(b, torch.Tensor):
                    b.resize_(16)


_plant()
_seen = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        if _seen[0] < 4:                 # in case it was made before import: shrink again
            _seen[0] += 1
            _plant()
        return torch.relu(x)
