# Has a helper process do its matmul: at its first call it forks a child
# that waits on a pipe for the inputs (in shared anonymous memory), computes
# A @ B there and writes the product back, while the runner blocks in
# read(). Work in another process is outside the runner's CPU clock, the
# judge's view of a call; the runner forbids new processes once the
# candidate is loaded, so the fork fails: runtime_error.
import mmap
import os
import struct

import torch
import torch.nn as nn

N = 128
BYTES = N * N * 4


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pid = None

    def start(self):
        self.mem = mmap.mmap(-1, 3 * BYTES)
        self.to_child, self.child_in = os.pipe()
        self.child_out, self.from_child = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.child_in)
            os.close(self.child_out)
            while os.read(self.to_child, 1):
                a = torch.frombuffer(self.mem, dtype=torch.float32,
                                     count=N * N).view(N, N)
                b = torch.frombuffer(self.mem, dtype=torch.float32,
                                     count=N * N, offset=BYTES).view(N, N)
                c = torch.frombuffer(self.mem, dtype=torch.float32,
                                     count=N * N,
                                     offset=2 * BYTES).view(N, N)
                torch.mm(a, b, out=c)
                os.write(self.from_child, b"x")
            os._exit(0)

    def forward(self, A, B):
        if self.pid is None:
            self.start()
        self.mem[0:BYTES] = A.contiguous().numpy().tobytes()
        self.mem[BYTES:2 * BYTES] = B.contiguous().numpy().tobytes()
        os.write(self.child_in, b"x")
        os.read(self.child_out, 1)
        out = torch.frombuffer(bytearray(self.mem[2 * BYTES:3 * BYTES]),
                               dtype=torch.float32).view(N, N)
        return out.clone()
