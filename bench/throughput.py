#!/usr/bin/env python3
"""Evaluation throughput: evaluations per minute (and per GPU) on a mixed
batch of the suite's candidates (naive, fast and wrong of every task),
through `kforge eval --batch` with --jobs J compile threads and --gpus G
device slots, from an empty compile cache (the candidates of an RL step are
new; --warm keeps the cache of a first run instead).

  bench/throughput.py [--backend host|cuda] [--jobs 1,2] [--gpus 1,2]
                      [--time-cap S] [--energy-time S] [--repeat K] [--warm]

Prints a table: backend, jobs, gpus, n, wall, evals/min, evals/min/GPU,
and where the time went: the slots' busy share (eval time / (wall x
slots)) and the compile time. A busy share near 1 means the devices (the
measurement itself) limit it; well below 1, the compiles do.
"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile, time


def batch(root, backend, repeat):
    ext = ".cu" if backend == "cuda" else ".c"
    lines = []
    for task in sorted(glob.glob(os.path.join(root, "tasks/*/*/task.json"))):
        d = os.path.dirname(task)
        for kind in ("naive", "fast", "wrong"):
            c = os.path.join(d, "candidates", kind + ext)
            if os.path.exists(c):
                lines.append((d, c))
    return lines * repeat


def gpus_here():
    try:
        vis = os.environ.get("CUDA_VISIBLE_DEVICES")
        if vis is not None:
            return len([x for x in vis.split(",") if x])
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def run(a, pairs, jobs, gpus, cache):
    with tempfile.NamedTemporaryFile("w", suffix=".batch", delete=False) as f:
        for t, c in pairs:
            f.write(f"{t} {c}\n")
        path = f.name
    cmd = [a.kforge, "eval", "--batch", path, "--jobs", str(jobs), "--gpus",
           str(gpus), "--backend", a.backend, "--json"]
    if a.time_cap:
        cmd += ["--time-cap", str(a.time_cap)]
    if a.energy_time is not None:
        cmd += ["--energy-time", str(a.energy_time)]
    if getattr(a, "python", None):
        cmd += ["--python", a.python]
    env = dict(os.environ, KFORGE_CACHE=cache)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    os.unlink(path)
    try:
        res = json.loads(p.stdout)
    except ValueError:
        sys.exit(f"kforge eval failed ({p.returncode}): {p.stderr[-2000:]}")
    return wall, res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--backend", default="host")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--gpus", default=None,
                    help="slot counts to try (default: 1, and 2 where "
                         "there are 2 GPUs; host: 1)")
    ap.add_argument("--time-cap", type=float, default=0)
    ap.add_argument("--energy-time", type=float, default=None,
                    help="seconds of energy measurement per side (0: none)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--warm", action="store_true")
    a = ap.parse_args()
    pairs = batch(os.getcwd(), a.backend, a.repeat)
    if a.gpus:
        slot_counts = [int(x) for x in a.gpus.split(",")]
    elif a.backend == "cuda":
        slot_counts = [1, 2] if gpus_here() >= 2 else [1]
    else:
        slot_counts = [1]
    rows = []
    for gpus in slot_counts:
        for jobs in [int(x) for x in a.jobs.split(",")]:
            cache = tempfile.mkdtemp(prefix="kforge-throughput-")
            if a.warm:
                run(a, pairs, jobs, gpus, cache)
            wall, res = run(a, pairs, jobs, gpus, cache)
            shutil.rmtree(cache, ignore_errors=True)
            ok = [r for r in res if r]
            statuses = {}
            for (t, c), r in zip(pairs, res):
                if not r:
                    continue
                k = r["status"]
                if k == "rejected":
                    k += "/" + (r.get("check") or "?")
                statuses[k] = statuses.get(k, 0) + 1
                # An honest candidate not ok is worth its reason.
                if k != "ok" and "/wrong." not in c:
                    print(f"  {c}: {k}: {(r.get('reason') or '')[:300]}",
                          file=sys.stderr, flush=True)
            ev = sum(r["farm"]["eval_s"] for r in ok
                     if r["farm"]["device"] >= 0 or a.backend == "host")
            comp = sum(r["farm"]["compile_s"] for r in ok)
            rate = len(res) * 60.0 / wall
            rows.append((a.backend, jobs, gpus, len(res), wall, rate,
                         rate / gpus, ev / (wall * gpus), comp, statuses))
            print(f"  done: jobs {jobs} gpus {gpus}: {wall:.1f} s",
                  file=sys.stderr, flush=True)
    print(f"throughput, {len(pairs)} evaluations (naive/fast/wrong of every "
          f"task), {'warm' if a.warm else 'cold'} cache, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.uname().nodename}, {os.cpu_count()} cores")
    print(f"{'backend':7s} {'jobs':>4s} {'gpus':>4s} {'n':>4s} {'wall s':>8s} "
          f"{'eval/min':>9s} {'/min/gpu':>9s} {'busy':>5s} {'compile s':>10s}"
          f"  statuses")
    for b, j, g, n, w, r, rg, busy, comp, st in rows:
        print(f"{b:7s} {j:4d} {g:4d} {n:4d} {w:8.1f} {r:9.1f} {rg:9.1f} "
              f"{busy:5.2f} {comp:10.1f}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    base = [r for r in rows if r[2] == 1]
    for r in rows:
        if r[2] > 1 and base:
            print(f"{r[2]} GPUs, jobs {r[1]}: {r[5] / max(x[5] for x in base):.2f}x "
                  f"the best 1-GPU rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
