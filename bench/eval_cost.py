#!/usr/bin/env python3
"""What one evaluation costs, whole: the wall time of `kforge eval` from
start to exit, for builds side by side (A/B, interleaved), on a few
candidates of the host backend.

usage: bench/eval_cost.py [--kforge build/kforge ...] [--reps 3]
          [--time-cap 0.3] [--backend host]

Each --kforge is one build (default: build/kforge). Each repetition runs
every candidate once with every build, in turn, with a warm compile cache
(a first untimed run fills it). Prints, per candidate and build, the median
wall seconds and the median `seconds` the result reports, and the ratio of
each build's median to the first's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ("tests/fixtures/rowsum", "tests/fixtures/rowsum/candidates/same.c"),
    ("tests/fixtures/rowsum", "tests/fixtures/rowsum/candidates/segv.c"),
    ("tasks/reduction/row_sum", "tasks/reduction/row_sum/candidates/fast.c"),
    ("tasks/activation/gelu", "tasks/activation/gelu/candidates/fast.c"),
    ("tasks/linear/matmul", "tasks/linear/matmul/candidates/fast.c"),
]


def one(kforge, task, cand, a, env):
    args = [kforge, "eval", task, cand, "--backend", a.backend,
            "--time-cap", a.time_cap, "--energy-time", "0", "--json"]
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    try:
        d = json.loads(p.stdout)
        return wall, d.get("seconds", 0), d["status"]
    except (ValueError, KeyError):
        return wall, 0, "no_result"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", action="append")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--time-cap", default="0.3")
    ap.add_argument("--backend", default="host")
    a = ap.parse_args()
    builds = a.kforge or ["build/kforge"]
    env = dict(os.environ)
    env.setdefault("KFORGE_CACHE", tempfile.mkdtemp(prefix="kforge-cost-"))
    for task, cand in CASES:  # fill the compile cache
        for b in builds:
            one(b, task, cand, a, env)
    walls = {(c, b): [] for c in CASES for b in builds}
    secs = {(c, b): [] for c in CASES for b in builds}
    status = {}
    for _ in range(a.reps):
        for c in CASES:
            for b in builds:
                w, s, st = one(b, c[0], c[1], a, env)
                walls[(c, b)].append(w)
                secs[(c, b)].append(s)
                status[(c, b)] = st
    print("| candidate | build | status | wall s (median of %d) | result's seconds | vs first build |" % a.reps)
    print("|---|---|---|---|---|---|")
    for c in CASES:
        base = statistics.median(walls[(c, builds[0])])
        for b in builds:
            m = statistics.median(walls[(c, b)])
            print("| %s | %s | %s | %.2f | %.2f | %.3fx |" % (
                c[1], b, status[(c, b)], m,
                statistics.median(secs[(c, b)]), m / base if base else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
