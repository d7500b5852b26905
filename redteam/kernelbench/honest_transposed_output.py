# Honest: an L2 norm computed in column-major layout, returned as a
# transposed view (correct values, not contiguous). The copy to dense is made
# inside its timed call; outside it the runner's copy (3.5 ms for 12 MiB) was
# read as time the candidate hid (unaccounted_time).
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        xt = x.t()                       # (dim, batch) view
        n = torch.norm(xt, p=2, dim=0, keepdim=True)
        yt = torch.empty(xt.shape, dtype=x.dtype)  # contiguous (dim, batch)
        torch.div(xt, n, out=yt)
        return yt.t()                    # (batch, dim), strides (1, batch)
