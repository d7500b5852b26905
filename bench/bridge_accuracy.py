#!/usr/bin/env python3
"""What kforge's KernelBench bridge adds to a call's time: kforge's median
for a module against a harness-free measurement of the same module on the
same device, for calls from a few microseconds to about 10 ms.

  bench/bridge_accuracy.py [--kforge build/kforge] [--python PY]
      [--time-cap 1] [--reps 200]

Each call length is a KernelBench-format task written here: forward
applies torch.sin R times to a float32 vector of N elements; the candidate
is the same module (an A/A pair), so kforge's candidate median is its
measurement of that module. The harness-free time is taken in one plain
process (this script's Python, no kforge): the module on cuda:0, a fresh
input per call, the L2 cache flushed before each call (as kforge's protocol
does), CUDA events around the forward on the current stream, the median
of --reps calls. Prints per length: both medians, the difference in us and
in %, and whether it is within 2 % or 2 us, whichever is larger; with
KernelBench's protocol (--protocol both) its mean beside.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

# (elements, repeats): about 5 us to 10 ms a call on an H200.
LENGTHS = [(1 << 10, 1), (1 << 16, 1), (1 << 20, 1), (1 << 22, 1),
           (1 << 24, 1), (1 << 26, 1), (1 << 28, 1), (1 << 28, 4),
           (1 << 28, 16)]

TASK = '''import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range({r}):
            x = torch.sin(x)
        return x


def get_inputs():
    return [torch.randn({n})]


def get_init_inputs():
    return []
'''


def harness_free(n, r, reps):
    import torch
    dev = torch.device("cuda")

    class M(torch.nn.Module):
        def forward(self, x):
            for _ in range(r):
                x = torch.sin(x)
            return x

    m = M().to(dev)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 1 << 26) // 4, device=dev)
    xs = [torch.randn(n, device=dev) for _ in range(2)]
    times = []
    with torch.no_grad():
        for i in range(reps + 3):
            x = xs[i % 2]
            x.normal_()
            flush.zero_()
            torch.cuda.synchronize()
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            m(x)
            b.record()
            b.synchronize()
            if i >= 3:
                times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--python", default=None)
    ap.add_argument("--time-cap", type=float, default=1)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="kforge-accuracy-")
    rows = []
    for n, r in LENGTHS:
        t = os.path.join(d, f"sin_{n}_{r}.py")
        c = os.path.join(d, f"sin_{n}_{r}_new.py")
        with open(t, "w") as f:
            f.write(TASK.format(cls="Model", n=n, r=r))
        with open(c, "w") as f:
            f.write(TASK.format(cls="ModelNew", n=n, r=r))
        cmd = [a.kforge, "eval", t, c, "--backend", "cuda", "--time-cap",
               str(a.time_cap), "--energy-time", "0", "--protocol", "both",
               "--json"]
        if a.python:
            cmd += ["--python", a.python]
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            print(f"{n} x{r}: no result: {p.stderr[-500:]}", flush=True)
            continue
        tm = res.get("timing") or {}
        kb = res.get("timing_kernelbench") or {}
        kf = (tm.get("candidate") or {}).get("median")
        kf_ref = (tm.get("reference") or {}).get("median")
        kbm = (kb.get("candidate") or {}).get("mean")
        free = harness_free(n, r, a.reps)
        if kf is None:
            print(f"{n} x{r}: {res.get('status')} {res.get('check')}: "
                  f"{(res.get('reason') or '')[:300]}", flush=True)
            continue
        diff_us = (kf - free) * 1000
        pct = 100 * (kf - free) / free
        ok = abs(diff_us) <= max(2.0, 0.02 * free * 1000)
        rows.append((n, r, free, kf, kf_ref, kbm, diff_us, pct, ok,
                     res.get("status"), tm.get("pairs")))
        print(f"  {n:>10d} x{r:<2d} free {free:.4f} ms kforge {kf:.4f} ms "
              f"({diff_us:+.2f} us, {pct:+.1f} %) {'ok' if ok else 'OFF'}",
              flush=True)
    print("bridge accuracy (cuda, --time-cap %g): kforge's candidate median "
          "against a harness-free median of the same module" % a.time_cap)
    print("| elements x sin | harness-free ms | kforge ms (cand / ref) | "
          "difference | within 2 % or 2 us | KernelBench mean ms | pairs |")
    print("|---|---|---|---|---|---|---|")
    for n, r, free, kf, kref, kbm, du, pct, ok, st, pairs in rows:
        print(f"| {n} x{r} | {free:.4f} | {kf:.4f} / {kref:.4f} | "
              f"{du:+.2f} us ({pct:+.1f} %) | {'yes' if ok else 'no'} | "
              f"{kbm if kbm is None else round(kbm, 4)} | {pairs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
