# HONEST honest_cudagraph (level1/30_ReLU_large): the ReLU is captured once in a
# CUDA graph on static buffers; each call copies the input into the static
# input, replays the graph on the current stream and returns the static
# output (an output reused across calls is allowed; it is right every call).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = None

    def forward(self, x):
        if self.g is None or self.sx.shape != x.shape:
            self.sx = torch.empty_like(x)
            self.sx.copy_(x)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    torch.relu(self.sx)
            torch.cuda.current_stream().wait_stream(s)
            self.g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.g):
                self.sy = torch.relu(self.sx)
        self.sx.copy_(x)
        self.g.replay()
        return self.sy
