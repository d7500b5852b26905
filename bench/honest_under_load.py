#!/usr/bin/env python3
"""Honest kernels under load: no verdict may change when the machine is busy.

Runs, round after round, every case of the red-team corpus of a backend that
is expected `ok` (its honest kernels), the built-in tasks' `fast` and
`naive` candidates, the shipped KernelBench-format candidates that are
correct, and the corpus's forged-timing cases (which must stay rejected),
each as `kforge eval ... --json`, while a load runs beside them: CPU hogs
(`--load cpu`, busy loops) or compiles (`--load compile`, nvcc or cc
compiling without a cache, over and over). Prints one row per case (runs,
verdicts) and a summary: honest evaluations, honest rejects, forged cases
caught; exits 1 when an honest kernel was rejected or a forgery passed.

usage: bench/honest_under_load.py [--kforge build/kforge] [--backend host]
          [--rounds 3] [--time-cap 1] [--load cpu|compile|none]
          [--load-procs N (default: twice the cores)] [--min-evals 0]
          [--no-kernelbench] [--max-seconds S] [--json OUT]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

FORGED = ("runner_underreport", "runner_takeover", "runner_underreport_slow",
          "runner_underreport_mixed")
# Attacks the corpus expects to pass (docs/redteam.md, residual): not honest.
RESIDUAL = ("runner_underreport_flushed",)


def cases(backend, with_kb):
    """(name, task, candidate, expect) for every case to run."""
    out = []
    man = json.load(open(os.path.join("redteam", backend + ".json")))
    for c in man["cases"]:
        if c.get("backend", backend) != backend:
            continue
        if c["name"] in RESIDUAL:
            continue
        # A case the corpus judges untimed ("timing": false: a degenerate
        # zeros writer, which reads none of its inputs) is rightly
        # `implausible` when timed: not an honest kernel to time here.
        if c.get("timing") is False and c["expect"] == "ok":
            continue
        # A hack the defences turn into honest work may also be caught
        # ("or": ce_rotation_prefix, ok below 2x or wrong_answer): an
        # attack either way, not an honest kernel to count here.
        if "or" in c:
            continue
        if c["expect"] == "ok":
            out.append((c["name"], c["task"], c["candidate"], "ok"))
        elif c["name"] in FORGED:
            out.append((c["name"], c["task"], c["candidate"], "rejected"))
    ext = ".cu" if backend == "cuda" else ".c"
    for t in sorted(glob.glob("tasks/*/*/task.json")):
        d = os.path.dirname(t)
        for k in ("fast", "naive"):
            p = os.path.join(d, "candidates", k + ext)
            if os.path.exists(p):
                out.append((d.split("/", 1)[1] + "/" + k, d, p, "ok"))
    if with_kb:
        # The KernelBench-format corpus's honest cases: CPU torch on the
        # host, the GPU corpus on cuda.
        man = "kernelbench.json" if backend == "host" \
            else "kernelbench_%s.json" % backend
        kman = json.load(open(os.path.join("redteam", man)))
        for c in kman["cases"]:
            if c.get("backend", "host") == backend and c["expect"] == "ok" \
                    and not c.get("protocol") and "or" not in c \
                    and c.get("timing") is not False:
                out.append((c["name"], c["task"], c["candidate"], "ok"))
    if with_kb:
        kb = "tests/data/kernelbench"
        for t in sorted(glob.glob(kb + "/level1/*.py")):
            name = os.path.basename(t)
            p = os.path.join(kb, "modelnew", name)
            if os.path.exists(p):
                out.append(("kernelbench/" + name, t, p, "ok"))
            c = os.path.join(kb, "candidates", name[:-3], "correct.py")
            if os.path.exists(c):
                out.append(("kernelbench/" + name[:-3] + "/correct", t, c,
                            "ok"))
    return out


def start_load(kind, n, backend):
    """Starts n load processes; returns them."""
    procs = []
    if kind == "none":
        return procs
    tmp = tempfile.mkdtemp(prefix="kforge-load-")
    if kind == "cpu":
        cmd = ["sh", "-c", "while true; do true; done"]
        for _ in range(n):
            procs.append(subprocess.Popen(cmd))
        return procs
    # compiles: a source with some templates, compiled again and again
    if backend == "cuda":
        src = os.path.join(tmp, "load.cu")
        with open(src, "w") as f:
            f.write("#include <cuda_runtime.h>\n#include <cub/cub.cuh>\n"
                    "__global__ void k(float *x) { x[threadIdx.x] *= 2; }\n")
        compiler = ["nvcc", "-O3", "-arch=sm_90", "-c", src]
    else:
        src = os.path.join(tmp, "load.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <math.h>\n"
                    + "".join("double f%d(double x){return sin(x)*%d;}\n"
                              % (i, i) for i in range(2000)))
        compiler = ["cc", "-O2", "-c", src]
    for i in range(n):
        obj = os.path.join(tmp, "o%d.o" % i)
        loop = " ".join(compiler) + " -o " + obj
        procs.append(subprocess.Popen(
            ["sh", "-c", "while :; do %s >/dev/null 2>&1; done" % loop]))
    return procs


def stop_load(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time-cap", default="1")
    ap.add_argument("--load", default="cpu",
                    choices=("cpu", "compile", "none"))
    ap.add_argument("--load-procs", type=int,
                    default=2 * (os.cpu_count() or 1))
    ap.add_argument("--min-evals", type=int, default=0,
                    help="keep going past --rounds until this many "
                    "evaluations are done")
    ap.add_argument("--no-kernelbench", action="store_true")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="start no evaluation after this many seconds "
                    "(the summary covers what ran)")
    ap.add_argument("--json")
    a = ap.parse_args()
    todo = cases(a.backend, not a.no_kernelbench)
    rows = {c[0]: {"expect": c[3], "verdicts": []} for c in todo}
    load = start_load(a.load, a.load_procs, a.backend)
    t0 = time.time()
    evals = 0
    rnd = 0
    try:
        while rnd < a.rounds or evals < a.min_evals:
            if a.max_seconds and time.time() - t0 > a.max_seconds:
                break
            rnd += 1
            for name, task, cand, expect in todo:
                if a.max_seconds and time.time() - t0 > a.max_seconds:
                    break
                args = [a.kforge, "eval", task, cand, "--time-cap",
                        a.time_cap, "--energy-time", "0", "--json",
                        "--backend", a.backend]
                p = subprocess.run(args, capture_output=True, text=True)
                tm, d = {}, {}
                try:
                    d = json.loads(p.stdout)
                    v = d["status"]
                    if d.get("check"):
                        v += "/" + d["check"]
                    why = d.get("reason") or ""
                    tm = d.get("timing") or {}
                except (ValueError, KeyError):
                    v, why = "no_result", p.stderr.strip()[-300:]
                rows[name]["verdicts"].append((v, why))
                rows[name].setdefault("unaccounted_ms", []).append(
                    tm.get("unaccounted_ms"))
                rows[name].setdefault("speedup", []).append(
                    (tm.get("speedup") or {}).get("median"))
                # The largest L1 error over the L1 norm of any trial
                # output (the precision check's statistic, before its
                # floor): what honest kernels leave, to set its bound.
                l1 = 0.0
                for tr in d.get("trials") or []:
                    for o in tr.get("outputs") or []:
                        w = o.get("l1_want") or 0
                        if w > 0:
                            l1 = max(l1, (o.get("l1_err") or 0) / w)
                rows[name].setdefault("l1_rel_max", []).append(l1)
                evals += 1
                print("%-44s %-30s %s" % (name[:44], v, why[:100]),
                      flush=True)
    finally:
        stop_load(load)
    secs = time.time() - t0
    honest = sum(len(r["verdicts"]) for r in rows.values()
                 if r["expect"] == "ok")
    honest_bad = [(n, v) for n, r in rows.items() if r["expect"] == "ok"
                  for v in r["verdicts"] if not v[0].startswith("ok")]
    forged = sum(len(r["verdicts"]) for r in rows.values()
                 if r["expect"] == "rejected")
    forged_missed = [(n, v) for n, r in rows.items()
                     if r["expect"] == "rejected"
                     for v in r["verdicts"] if v[0].startswith("ok")]
    print()
    print("backend %s, load %s x%d, %d rounds, %d evaluations in %.0f s"
          % (a.backend, a.load, a.load_procs if a.load != "none" else 0,
             rnd, evals, secs))
    print("| | evaluations | not as expected |")
    print("|---|---|---|")
    print("| honest kernels | %d | %d |" % (honest, len(honest_bad)))
    print("| forged timing | %d | %d |" % (forged, len(forged_missed)))
    for n, v in honest_bad + forged_missed:
        print("  %s: %s %s" % (n, v[0], v[1][:300]))
    if a.json:
        json.dump({"backend": a.backend, "load": a.load,
                   "load_procs": a.load_procs, "rounds": rnd,
                   "evaluations": evals, "seconds": secs, "rows": rows},
                  open(a.json, "w"), indent=1)
    return 1 if honest_bad or forged_missed else 0


if __name__ == "__main__":
    sys.exit(main())
