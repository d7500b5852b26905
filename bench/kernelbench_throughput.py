#!/usr/bin/env python3
"""KernelBench-format throughput: evaluations a minute of the shipped
KernelBench tasks and candidates (tests/data/kernelbench), through
`kforge eval --batch` (the bridge, one device slot), from an empty cache
(cold: every load_inline build is new) and then again with that cache
(warm), side by side in one run.

  bench/kernelbench_throughput.py [--kforge build/kforge] [--backend cuda]
      [--jobs 2] [--time-cap 1] [--energy-time 0] [--python PY]
      [--repeat 1] [--one-task N]

The batch mixes honest candidates, load_inline builds (C++ and, on cuda,
CUDA), a build that fails, a candidate that falls back to PyTorch after a
failed build, and a wrong one. Prints per mode: n, wall, evaluations a
minute, and the medians of what one evaluation cost: in all (its record's
seconds), its timing, its candidate's build, and the rest (the fixed cost:
processes, torch's import, the device context, loading, checking), with
the statuses, and how many ran in a warm bridge (worker.warm). One line
per item with --items. --one-task N: N pairs of one task instead of the
mix, the case warm bridges serve.
"""
import argparse, os, shutil, statistics, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from throughput import run as run_batch  # noqa: E402

KB = "tests/data/kernelbench"

# (task, candidate) below KB; candidates/<task>/<name>.py or modelnew.
PAIRS = [
    ("level1/1_ReLU", "candidates/1_ReLU/correct"),
    ("level1/1_ReLU", "candidates/1_ReLU/wrong"),
    ("level1/1_ReLU", "candidates/1_ReLU/cpp_inline"),
    ("level1/1_ReLU", "candidates/1_ReLU/cpp_broken"),
    ("level1/1_ReLU", "candidates/1_ReLU/cpp_fallback"),
    ("level1/1_ReLU", "modelnew/1_ReLU"),
    ("level1/2_Matmul", "candidates/2_Matmul/correct"),
    ("level1/2_Matmul", "candidates/2_Matmul/transposed"),
    ("level1/2_Matmul", "modelnew/2_Matmul"),
    ("level1/3_Sum_reduction", "candidates/3_Sum_reduction/correct"),
    ("level1/3_Sum_reduction", "modelnew/3_Sum_reduction"),
    ("level1/4_Constant_relu", "modelnew/4_Constant_relu"),
    ("structured/13_Matmul_symmetric",
     "candidates/13_Matmul_symmetric/transposed"),
    ("structured/14_Matmul_upper_triangular",
     "candidates/14_Matmul_upper_triangular/blocked"),
    ("structured/23_Softmax", "candidates/23_Softmax/exp_sum"),
    ("structured/100_HingeLoss", "candidates/100_HingeLoss/signs"),
]
CUDA_ONLY = [("level1/1_ReLU", "candidates/1_ReLU/cuda_inline")]
HOST_SKIP = {"candidates/1_ReLU/cpp_inline"}  # slow C++ builds on 2 cores


ONE_TASK = [("level1/1_ReLU", "candidates/1_ReLU/correct"),
            ("level1/1_ReLU", "candidates/1_ReLU/wrong"),
            ("level1/1_ReLU", "modelnew/1_ReLU")]


def pairs(backend, repeat, one_task=0):
    ps = list(PAIRS) + (CUDA_ONLY if backend == "cuda" else [])
    if one_task:
        # Many candidates of one task, as a search or a trainer sends
        # them: the case warm bridges serve.
        ps = [ONE_TASK[k % len(ONE_TASK)] for k in range(one_task)]
    out = []
    for t, c in ps:
        tp, cp = os.path.join(KB, t + ".py"), os.path.join(KB, c + ".py")
        if os.path.exists(tp) and os.path.exists(cp):
            out.append((tp, cp))
    return out * repeat


PHASES = ("load", "wait", "pin", "trials", "timing", "end")
SLOT = ("pin", "trials", "timing")


def costs(r):
    total = r.get("seconds") or 0
    timed = sum((r.get(k) or {}).get("seconds") or 0
                for k in ("timing", "timing_kernelbench"))
    build = ((r.get("compile") or {}).get("candidate") or {}) \
        .get("seconds") or 0
    return total, timed, build, max(0.0, total - timed - build)


def med(xs):
    return statistics.median(xs) if xs else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--time-cap", type=float, default=1)
    ap.add_argument("--energy-time", type=float, default=0)
    ap.add_argument("--python")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--items", action="store_true")
    ap.add_argument("--one-task", type=int, default=0, metavar="N",
                    help="N pairs of level1/1_ReLU (its correct and wrong "
                    "candidates and modelnew in turn) instead of the mix")
    a = ap.parse_args()
    ps = pairs(a.backend, a.repeat, a.one_task)
    if a.backend != "cuda":
        ps = [(t, c) for t, c in ps
              if not any(c.endswith(s + ".py") for s in HOST_SKIP)]
    cache = tempfile.mkdtemp(prefix="kforge-kb-throughput-")
    rows, phase_rows = [], []
    for mode in ("cold", "warm"):
        wall, res = run_batch(a, ps, a.jobs, 1, cache)
        st, tot, tim, bld, fix = {}, [], [], [], []
        warm = 0
        ph = {k: [] for k in PHASES}
        for (t, c), r in zip(ps, res):
            if not r:
                st["no result"] = st.get("no result", 0) + 1
                continue
            k = r["status"]
            if k == "rejected":
                k += "/" + (r.get("check") or "?")
            st[k] = st.get(k, 0) + 1
            warm += bool((r.get("worker") or {}).get("warm"))
            x = costs(r)
            tot.append(x[0]); tim.append(x[1]); bld.append(x[2])
            fix.append(x[3])
            for k in PHASES:
                if isinstance((r.get("phases") or {}).get(k), (int, float)):
                    ph[k].append(r["phases"][k])
            if a.items:
                print(f"  {mode} {os.path.relpath(c, KB):52s} {k:28s} "
                      f"total {x[0]:6.2f} timing {x[1]:5.2f} build "
                      f"{x[2]:6.2f} fixed {x[3]:5.2f}", flush=True)
                if k not in ("ok",) and "/wrong" not in c:
                    print(f"    {(r.get('reason') or '')[:400]}",
                          flush=True)
        rows.append((mode, len(res), wall, len(res) * 60.0 / wall,
                     med(tot), med(tim), med(bld), max(bld or [0]),
                     med(fix), st, warm))
        phase_rows.append((mode, [med(ph[k]) for k in PHASES],
                           [sum(ph[k]) for k in PHASES]))
    shutil.rmtree(cache, ignore_errors=True)
    print(f"KernelBench-format throughput, {len(ps)} evaluations, "
          f"--backend {a.backend} --jobs {a.jobs} --gpus 1 --time-cap "
          f"{a.time_cap} --energy-time {a.energy_time}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.uname().nodename}, {os.cpu_count()} cores")
    print(f"{'cache':5s} {'n':>3s} {'wall s':>7s} {'eval/min':>8s} "
          f"{'median s':>8s} {'timing':>6s} {'build':>6s} {'max build':>9s}"
          f" {'fixed':>6s} {'warm':>4s}  statuses")
    for m, n, w, rate, t, ti, b, bm, fx, st, wm in rows:
        print(f"{m:5s} {n:3d} {w:7.1f} {rate:8.1f} {t:8.2f} {ti:6.2f} "
              f"{b:6.2f} {bm:9.2f} {fx:6.2f} {wm:4d}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    # Where the time went (the records' phases): the slot holds pin,
    # trials and timing of one evaluation at a time; the loading threads
    # hold load (and wait, loaded, for the slot); end (the bridge's exit,
    # the record) runs beside the slot's next evaluation.
    print("phases, s: median per evaluation (sum over the pass)")
    print(f"{'cache':5s} " + " ".join(f"{k:>15s}" for k in PHASES)
          + f" {'slot sum':>9s}")
    for m, md, sm in phase_rows:
        slot = sum(v for k, v in zip(PHASES, sm) if k in SLOT)
        print(f"{m:5s} " + " ".join(f"{x:6.2f} ({y:6.1f})"
                                    for x, y in zip(md, sm))
              + f" {slot:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
