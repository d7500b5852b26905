#!/usr/bin/env python3
"""Harness overhead: the measured time of a kernel that does almost nothing.

bench/tasks/tiny adds 1 to 32 floats (one block of 32 threads on cuda). Its
measured time under kforge's protocol and KernelBench's is an upper bound on
what each harness adds to a call; the runners' own cost per call (already
taken out on the host) is printed beside it.

On cuda the same compiled kernel is also timed with no harness at all
(bench/bare/bare_call.cu: a flush, an event, the call, an event, a
synchronisation, in one process, nothing else), and the difference of the
medians is what kforge adds to a call.

usage: bench/overhead.py [--kforge build/kforge] [--backend cuda] [--reps 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile


def bare(a, task, tmp):
    """The harness-free median (us, flushed and warm) of the tiny kernel,
    compiled by kforge, or None where nvcc is missing."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    kdir = os.path.dirname(os.path.abspath(a.kforge))
    exe = os.path.join(tmp, "bare_call")
    subprocess.run([nvcc, "-O2", "-o", exe,
                    os.path.join(root, "bench/bare/bare_call.cu"),
                    "-I" + os.path.join(root, "include"),
                    "-I" + os.path.join(kdir, "include"), "-ldl"],
                   check=True)
    env = dict(os.environ, KFORGE_CACHE=os.path.join(tmp, "cache"))
    p = subprocess.run([a.kforge, "compile", "--json",
                        task + "/reference.cu"], env=env, check=True,
                       capture_output=True, text=True)
    key = json.loads(p.stdout)[0]["key"]
    so = os.path.join(tmp, "cache", "compile", key + ".so")
    p = subprocess.run([exe, so, "32", "5000"], check=True,
                       capture_output=True, text=True)
    got = {}
    for line in p.stdout.splitlines():
        f = line.split()
        got[f[0]] = float(f[2])
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    ext = ".cu" if a.backend == "cuda" else ".c"
    task = "bench/tasks/tiny"
    floor = None
    if a.backend == "cuda":
        with tempfile.TemporaryDirectory() as tmp:
            floor = bare(a, task, tmp)
        if floor:
            print("no harness (bench/bare/bare_call.cu, 5000 calls): "
                  "flushed median %.2f us, warm median %.2f us" %
                  (floor["flushed"], floor["warm"]))
    print("| rep | kforge median us [95% CI] | kernelbench mean us | "
          "runner cost us (ref / cand) |")
    print("|---|---|---|---|")
    medians = []
    for r in range(a.reps):
        p = subprocess.run([a.kforge, "eval", task, task + "/reference" + ext,
                            "--backend", a.backend, "--protocol", "both",
                            "--time-cap", "2", "--json"],
                           capture_output=True, text=True)
        d = json.loads(p.stdout)
        if d.get("status") != "ok":
            print("| %d | %s: %s | | |" % (r, d.get("status"),
                                           d.get("reason")))
            continue
        c = d["timing"]["candidate"]
        kb = d["timing_kernelbench"]["candidate"]
        ov = d["timing"].get("runner_overhead_ms", {})
        medians.append(c["median"] * 1e3)
        print("| %d | %.2f [%.2f, %.2f] | %.2f | %.1f / %.1f |" %
              (r, c["median"] * 1e3, c["ci95"][0] * 1e3, c["ci95"][1] * 1e3,
               kb["mean"] * 1e3, ov.get("reference", 0) * 1e3,
               ov.get("candidate", 0) * 1e3))
    if floor and medians:
        m = statistics.median(medians)
        print("kforge adds %.2f us to a call (median of the reps' medians "
              "%.2f us less the harness-free flushed median %.2f us)" %
              (m - floor["flushed"], m, floor["flushed"]))


if __name__ == "__main__":
    main()
