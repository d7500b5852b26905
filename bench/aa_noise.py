#!/usr/bin/env python3
"""A/A noise: every built-in task's reference timed against itself.

Each evaluation is `kforge eval TASK REFERENCE --protocol both`, in worker
processes of its own, repeated; |speedup - 1| is the error of a protocol
that should say 1. Prints, for kforge's protocol and KernelBench's side by
side, the median, p90 and max of |speedup - 1| over references of at least
--min-us microseconds, then one row per task.

usage: bench/aa_noise.py [--kforge build/kforge] [--backend cuda]
                         [--reps 3] [--time-cap 2] [--min-us 20]
                         [--tasks DIR] [--json OUT]
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--time-cap", default="2")
    ap.add_argument("--min-us", type=float, default=20.0)
    ap.add_argument("--tasks", default="tasks")
    ap.add_argument("--json")
    a = ap.parse_args()
    ext = ".cu" if a.backend == "cuda" else ".c"
    tasks = sorted(os.path.dirname(p) for p in
                   glob.glob(os.path.join(a.tasks, "*", "*", "task.json")))
    rows = []
    for t in tasks:
        ref = os.path.join(t, "reference" + ext)
        if not os.path.exists(ref):
            continue
        for r in range(a.reps):
            p = subprocess.run([a.kforge, "eval", t, ref, "--backend",
                                a.backend, "--protocol", "both",
                                "--time-cap", a.time_cap, "--json"],
                               capture_output=True, text=True)
            try:
                d = json.loads(p.stdout)
            except ValueError:
                print("%s: no result (%s)" % (t, p.stderr.strip()[-200:]),
                      file=sys.stderr)
                continue
            tm, kb = d.get("timing"), d.get("timing_kernelbench")
            if d.get("status") != "ok" or not tm or not kb:
                print("%s: %s %s" % (t, d.get("status"), d.get("reason")),
                      file=sys.stderr)
                continue
            rows.append({
                "task": os.path.relpath(t, a.tasks), "rep": r,
                "ref_ms": tm["reference"]["median"],
                "kforge": tm["speedup"]["median"],
                "kforge_ci": tm["speedup"]["ci95"],
                "pairs": tm["pairs"],
                "kernelbench": kb["speedup"],
            })
            print("%-28s rep %d  ref %.4f ms  kforge %.4fx  kernelbench "
                  "%.4fx" % (rows[-1]["task"], r, rows[-1]["ref_ms"],
                             rows[-1]["kforge"], rows[-1]["kernelbench"]),
                  file=sys.stderr)
    big = [x for x in rows if x["ref_ms"] * 1e3 >= a.min_us]
    print("A/A over %d evaluations of %d references >= %g us (%s, %d "
          "reps each)" % (len(big), len({x["task"] for x in big}),
                          a.min_us, a.backend, a.reps))
    print()
    print("| protocol | median abs(speedup-1) | p90 | max |")
    print("|---|---|---|---|")
    for proto in ("kforge", "kernelbench"):
        e = [abs(x[proto] - 1) for x in big]
        print("| %s | %.2f %% | %.2f %% | %.2f %% |" %
              (proto, 100 * pct(e, 0.5), 100 * pct(e, 0.9),
               100 * max(e) if e else float("nan")))
    print()
    print("| task | reference ms | kforge max abs(s-1) | kernelbench max "
          "abs(s-1) |")
    print("|---|---|---|---|")
    for t in sorted({x["task"] for x in rows}):
        xs = [x for x in rows if x["task"] == t]
        print("| %s | %.4f | %.2f %% | %.2f %% |" %
              (t, sorted(x["ref_ms"] for x in xs)[len(xs) // 2],
               100 * max(abs(x["kforge"] - 1) for x in xs),
               100 * max(abs(x["kernelbench"] - 1) for x in xs)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
