#!/usr/bin/env python3
"""Compile latency of candidates: cold and cached, p50 and p95, per path.

Each source is compiled by `kforge compile` (the compile module, as an
evaluation calls it) in a process of its own, first into an empty cache
(cold), then again (cached); the time is the wall time of kf_compile in
that process. Paths:
  nvcc-shared  one `nvcc -shared` (KFORGE_NVCC_LINK=nvcc), the old path
  split        `nvcc -c`, then gcc links (the default)
It also checks that the paths agree: both build a source or both fail, and
the objects import the same symbols. Runs here and on the GPU machine:

  bench/compile_latency.py [--kforge build/kforge] [--limit N] [FILE...]
"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile, time

PATHS = {"nvcc-shared": {"KFORGE_NVCC_LINK": "nvcc"}, "split": {}}


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def default_files(root):
    fs = sorted(glob.glob(os.path.join(root, "tasks/*/*/candidates/*.cu")))
    fs += sorted(glob.glob(os.path.join(root, "tasks/*/*/reference.cu")))
    fs += sorted(glob.glob(os.path.join(root, "redteam/cuda/*.cu")))
    return fs


def redteam_tasks(root):
    tasks = {}
    try:
        with open(os.path.join(root, "redteam/cuda.json")) as f:
            for c in json.load(f)["cases"]:
                tasks[os.path.normpath(os.path.join(root, c["candidate"]))] = \
                    os.path.join(root, c["task"])
    except (OSError, KeyError, ValueError):
        pass
    return tasks


def compile_one(kforge, f, task, env, no_cache=False):
    cmd = [kforge, "compile", "--json"] + (["--no-cache"] if no_cache else [])
    if task:
        cmd += ["--task", task]
    cmd.append(f)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)[0]
    except (ValueError, IndexError):
        return {"file": f, "ok": False, "wall_s": float("nan"),
                "imports": [], "error": p.stderr.strip()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--paths", default="nvcc-shared,split")
    ap.add_argument("--limit", type=int, default=0, help="first N files")
    ap.add_argument("--rounds", type=int, default=1,
                    help="cold and cached compiles per file and path")
    ap.add_argument("--json", help="write the raw results here")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = os.getcwd()
    files = a.files or default_files(root)
    if a.limit:
        files = files[:a.limit]
    rt = redteam_tasks(root)
    paths = a.paths.split(",")
    results = {p: [] for p in paths}
    caches = {p: tempfile.mkdtemp(prefix="kforge-latency-") for p in paths}
    # Interleaved, file by file, so that a busy machine slows both alike.
    for f in files:
        task = rt.get(os.path.normpath(os.path.abspath(f)))
        for path, rnd in [(p, r) for r in range(a.rounds) for p in paths]:
            env = dict(os.environ, KFORGE_CACHE=caches[path], **PATHS[path])
            if path == "split":
                env.pop("KFORGE_NVCC_LINK", None)
            cold = compile_one(a.kforge, f, task, env, no_cache=rnd > 0)
            hot = compile_one(a.kforge, f, task, env)
            results[path].append(
                {"file": f, "ok": cold["ok"], "cold_s": cold["wall_s"],
                 "cached_s": hot["wall_s"], "cached": hot.get("cached"),
                 "imports": sorted(cold["imports"])})
            print(f"  {path:12s} {'ok' if cold['ok'] else 'FAIL':4s} "
                  f"{cold['wall_s']:7.3f} s  {hot['wall_s']*1e3:7.2f} ms  {f}",
                  file=sys.stderr, flush=True)
    for c in caches.values():
        shutil.rmtree(c, ignore_errors=True)
    print(f"compile latency, {len(files)} sources x {a.rounds} rounds, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.uname().nodename}, {os.cpu_count()} cores")
    print(f"{'path':12s} {'n':>4s} {'cold p50':>9s} {'cold p95':>9s} "
          f"{'cached p50':>11s} {'cached p95':>11s}")
    for path, rows in results.items():
        cold = [r["cold_s"] for r in rows if r["ok"]]
        hot = [r["cached_s"] for r in rows if r["ok"]]
        print(f"{path:12s} {len(cold):4d} {pct(cold,50):8.3f}s {pct(cold,95):8.3f}s "
              f"{pct(hot,50)*1e3:9.2f}ms {pct(hot,95)*1e3:9.2f}ms")
    names = list(results)
    bad = 0
    if len(names) == 2:
        for x, y in zip(results[names[0]], results[names[1]]):
            if x["ok"] != y["ok"] or x["imports"] != y["imports"]:
                bad += 1
                print(f"DIFFERS: {x['file']}: ok {x['ok']}/{y['ok']}, imports "
                      f"{sorted(set(x['imports']) ^ set(y['imports']))}")
        pairs = len(results[names[0]])
        print(f"agreement: {pairs - bad}/{pairs} builds alike (same outcome, "
              f"same imports)")
        diff = sorted(x["cold_s"] - y["cold_s"] for x, y in
                      zip(results[names[0]], results[names[1]])
                      if x["ok"] and y["ok"])
        if diff:
            print(f"paired cold difference {names[0]} - {names[1]}: median "
                  f"{pct(diff, 50)*1e3:.0f} ms, {names[1]} faster in "
                  f"{sum(d > 0 for d in diff)}/{len(diff)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
