#!/usr/bin/env python3
"""Harness overhead: the measured time of a kernel that does almost nothing.

bench/tasks/tiny adds 1 to 32 floats (one block of 32 threads on cuda). Its
measured time under kforge's protocol and KernelBench's is an upper bound on
what each harness adds to a call; the runners' own cost per call (already
taken out on the host) is printed beside it.

usage: bench/overhead.py [--kforge build/kforge] [--backend cuda] [--reps 3]
"""
import argparse
import json
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    ext = ".cu" if a.backend == "cuda" else ".c"
    task = "bench/tasks/tiny"
    print("| rep | kforge median us [95% CI] | kernelbench mean us | "
          "runner cost us (ref / cand) |")
    print("|---|---|---|---|")
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
        print("| %d | %.2f [%.2f, %.2f] | %.2f | %.1f / %.1f |" %
              (r, c["median"] * 1e3, c["ci95"][0] * 1e3, c["ci95"][1] * 1e3,
               kb["mean"] * 1e3, ov.get("reference", 0) * 1e3,
               ov.get("candidate", 0) * 1e3))


if __name__ == "__main__":
    main()
