#!/usr/bin/env python3
"""What the KernelBench bridge's per-call copies cost on a CUDA device, in
one plain process (no kforge): a 12 MiB float32 tensor copied to the device
from pageable and from pinned memory, back by .to("cpu") and into a pinned
buffer, its bytes taken (ctypes.string_at), and sent through a pipe to
another process; then a 16K-float ReLU timed with CUDA events with the end
event right after the call and after torch.cuda.synchronize(). Medians
(p10, p90) of 50 repetitions.

  python3 bench/bridge_copies.py
"""
import ctypes, os, statistics, subprocess, sys, time, torch
N = 1536 * 2048
def med(f, k=50):
    xs = []
    for _ in range(k):
        t = time.perf_counter_ns(); f(); xs.append((time.perf_counter_ns() - t) / 1e6)
    xs.sort(); return "median %.3f ms p10 %.3f p90 %.3f" % (statistics.median(xs), xs[len(xs)//10], xs[9*len(xs)//10])
x = torch.randn(N); d = torch.empty(N, device="cuda"); p = torch.empty(N, pin_memory=True)
print("H2D pageable 12MiB", med(lambda: (d.copy_(x), torch.cuda.synchronize())))
xp = x.pin_memory()
print("H2D pinned", med(lambda: (d.copy_(xp), torch.cuda.synchronize())))
print("D2H pageable .to(cpu)", med(lambda: d.to("cpu")))
print("D2H pinned copy_", med(lambda: (p.copy_(d), torch.cuda.synchronize())))
print("string_at 12MiB", med(lambda: ctypes.string_at(p.data_ptr(), N * 4)))
b = ctypes.string_at(p.data_ptr(), N * 4)
r = subprocess.Popen([sys.executable, "-c", "import sys,os\nf=sys.stdin.buffer\nwhile True:\n  b=f.read(%d)\n  if not b: break\n  os.write(1,b'k')" % (N * 4)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def pipe():
    r.stdin.write(b); r.stdout.read(1)
print("pipe 12MiB + ack", med(pipe))
r.stdin.close(); r.wait()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
y = torch.randn(16 * 1024, device="cuda")
def ev(sync):
    xs = []
    for _ in range(200):
        s.record(); torch.relu(y)
        if sync: torch.cuda.synchronize()
        e.record(); torch.cuda.synchronize(); xs.append(s.elapsed_time(e) * 1e3)
    return "median %.1f us" % statistics.median(xs)
print("relu 16K events, end right after", ev(False)); print("relu 16K events, sync before end", ev(True))
