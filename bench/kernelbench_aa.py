#!/usr/bin/env python3
"""A/A over KernelBench-format tasks: each task's own Model as its candidate.

For every task file (`<digits>_<name>.py`) in the given directories, makes
an A/A candidate, the task's text with `ModelNew = Model` appended (or, with
--subclass, `class ModelNew(Model): pass`), in a temporary directory, and
runs

    KFORGE eval TASK CANDIDATE --backend B --time-cap T --energy-time 0
        --json [--protocol P] [--python PY]

--reps times, optionally with --hogs N busy-loop processes running for the
whole run. An honest candidate identical to the reference should be `ok`
with a speedup near 1: every pair that is not `ok` is an honest kernel
rejected, and |speedup - 1| is the timing's error.

Prints one row per task (status counts, the reference's median time, the
speedup's median and range over the reps, the candidate's and reference's
unaccounted time, the statistic the unaccounted_time check compares and its
limit), then a summary: the pairs that were not `ok`, each with its check and
its reason in full, and the median, p90 and max of |speedup - 1|.

usage: bench/kernelbench_aa.py [DIR|TASK.py ...] [--kforge build/kforge]
           [--backend host|cuda] [--reps 3] [--time-cap 1] [--python PY]
           [--protocol kforge|kernelbench|both] [--hogs N] [--seed N]
           [--min-us US] [--subclass] [--keep DIR] [--json OUT]

Default directories: tests/data/kernelbench/level1 level2 structured.
Exit status: 0 when every evaluation ran (whatever its verdict: this is a
measurement), 2 on a usage error (a missing kforge binary or directory, no
tasks), 1 when some evaluation gave no result at all.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aa_noise import pct  # noqa: E402

DEFAULT_DIRS = ["tests/data/kernelbench/level1",
                "tests/data/kernelbench/level2",
                "tests/data/kernelbench/structured"]
TASK_RE = re.compile(r"^(\d+)_.+\.py$")


def usage_error(msg):
    print("kernelbench_aa.py: " + msg, file=sys.stderr)
    sys.exit(2)


def median(xs):
    return pct(xs, 0.5)


def find_tasks(paths):
    """The task files named by paths (files, or directories searched one
    level deep), in the order given, each directory's sorted by number."""
    out = []
    for p in paths:
        if os.path.isfile(p):
            if not p.endswith(".py"):
                usage_error("%s: a task is a KernelBench-format .py file"
                            % p)
            out.append(p)
            continue
        if not os.path.isdir(p):
            usage_error("%s: no such directory or task file" % p)
        found = []
        for name in os.listdir(p):
            m = TASK_RE.match(name)
            if m and os.path.isfile(os.path.join(p, name)):
                found.append((int(m.group(1)), name))
        if not found:
            usage_error("%s: no task files (<digits>_<name>.py) in it" % p)
        out.extend(os.path.join(p, n) for _, n in sorted(found))
    return out


def make_candidate(task, root, subclass):
    """Writes the A/A candidate of task under root: the task's own text
    with its Model exposed as ModelNew. Returns its path."""
    sub = os.path.join(root, os.path.basename(os.path.dirname(
        os.path.abspath(task))))
    os.makedirs(sub, exist_ok=True)
    path = os.path.join(sub, os.path.basename(task))
    with open(task) as f:
        text = f.read()
    tail = ("\n\nclass ModelNew(Model):\n    pass\n" if subclass else
            "\n\nModelNew = Model\n")
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n\n# A/A: the task's own Model is the "
                "candidate." + tail)
    return path


def start_hogs(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(n)]


def stop_hogs(hogs):
    for h in hogs:
        if h.poll() is None:
            h.kill()
    for h in hogs:
        h.wait()


def unaccounted(tm):
    """(candidate ms, reference ms, statistic ms, limit ms) of a timing
    block's unaccounted_ms, the statistic being what the unaccounted_time
    check holds to its limit: on the host the lower end of the median
    difference's 95 % interval, on a device the lower deciles' difference.
    None where the block has no such figures (fewer than 3 pairs)."""
    u = (tm or {}).get("unaccounted_ms")
    if not isinstance(u, dict) or "limit" not in u:
        return None
    if u.get("statistic") == "p10_difference":
        stat = u.get("candidate_p10", 0) - u.get("reference_p10", 0)
    else:
        ci = u.get("difference_ci95") or [u.get("difference", 0)]
        stat = ci[0]
    return (u.get("candidate"), u.get("reference"), stat, u.get("limit"))


def eval_flags(a):
    """The options of kforge eval that every evaluation here gets."""
    f = ["--backend", a.backend, "--time-cap", str(a.time_cap),
         "--energy-time", "0", "--json"]
    if a.protocol:
        f += ["--protocol", a.protocol]
    if a.seed is not None:
        f += ["--seed", str(a.seed)]
    if a.python:
        f += ["--python", a.python]
    return f


def evaluate(a, task, cand):
    cmd = [a.kforge, "eval", task, cand] + eval_flags(a)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=a.eval_timeout)
    except subprocess.TimeoutExpired:
        return {"status": "no_result", "check": "timeout",
                "reason": "kforge eval ran past %g s" % a.eval_timeout,
                "wall_s": time.time() - t0}
    wall = time.time() - t0
    try:
        d = json.loads(p.stdout)
    except ValueError:
        err = (p.stderr or "").strip()
        return {"status": "no_result", "check": "exit %d" % p.returncode,
                "reason": err[-2000:] or "no JSON on stdout",
                "wall_s": wall}
    return record_of(d, wall)


def evaluate_batch(a, pairs):
    """Every (task, candidate) of pairs in one `kforge eval --batch
    --jobs N` (the farm: the next pairs load while one is measured); one
    record per pair, in order."""
    with tempfile.NamedTemporaryFile("w", suffix=".batch",
                                     delete=False) as f:
        for t, c in pairs:
            f.write("%s %s\n" % (t, c))
        path = f.name
    cmd = [a.kforge, "eval", "--batch", path, "--jobs",
           str(a.batch_jobs)] + eval_flags(a)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=a.eval_timeout * max(1, len(pairs)))
        out = json.loads(p.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        return [{"status": "no_result", "check": "batch",
                 "reason": str(e)[-2000:], "wall_s": time.time() - t0}
                for _ in pairs]
    finally:
        os.unlink(path)
    wall = time.time() - t0
    recs = []
    for d in out:
        if not isinstance(d, dict) or "status" not in d:
            recs.append({"status": "no_result", "check": "batch",
                         "reason": json.dumps(d)[-2000:], "wall_s": wall})
        else:
            recs.append(record_of(d, (d.get("farm") or {}).get("eval_s")
                                  or 0.0))
    return recs


def record_of(d, wall):
    """One evaluation's record (kforge eval --json) as this script keeps
    it."""
    tm = d.get("timing") or {}
    # With --protocol kernelbench the kforge block is absent and timing is
    # KernelBench's: speedup a number, the ratio of means.
    kb = d.get("timing_kernelbench")
    if tm.get("protocol") == "kernelbench":
        kb, tm = tm, {}
    sp = tm.get("speedup")
    r = {
        "status": d.get("status"),
        "check": d.get("check"),
        "reason": d.get("reason"),
        "degenerate": bool((d.get("degenerate") or {}).get("flag")),
        "task_id": (d.get("task") or {}).get("id"),
        "seed": d.get("seed"),
        "seconds": d.get("seconds"),
        "wall_s": wall,
        "pairs": tm.get("pairs"),
        "ref_ms": (tm.get("reference") or {}).get("median"),
        "cand_ms": (tm.get("candidate") or {}).get("median"),
        "speedup": sp.get("median") if isinstance(sp, dict) else None,
        "speedup_ci95": sp.get("ci95") if isinstance(sp, dict) else None,
        "kb_speedup": (kb or {}).get("speedup")
        if isinstance((kb or {}).get("speedup"), (int, float)) else None,
    }
    if r["ref_ms"] is None and kb:
        r["ref_ms"] = (kb.get("reference") or {}).get("mean")
    ua = unaccounted(tm) or unaccounted(kb)
    if ua:
        (r["unacc_cand_ms"], r["unacc_ref_ms"], r["unacc_stat_ms"],
         r["unacc_limit_ms"]) = ua
    return r


def status_key(r):
    s = r.get("status") or "?"
    if s != "ok" and r.get("check"):
        s += "/" + r["check"]
    return s


def fmt(x, spec="%.4f"):
    return "-" if x is None else spec % x


def task_row(task, reps):
    counts = {}
    for r in reps:
        counts[status_key(r)] = counts.get(status_key(r), 0) + 1
    sp = [r["speedup"] for r in reps
          if r.get("status") == "ok" and r.get("speedup") is not None]
    kb = [r["kb_speedup"] for r in reps
          if r.get("status") == "ok" and r.get("kb_speedup") is not None]

    def med_of(k):
        xs = [r[k] for r in reps if r.get(k) is not None]
        return median(xs) if xs else None

    ratios = [r["unacc_stat_ms"] / r["unacc_limit_ms"] for r in reps
              if r.get("unacc_limit_ms")]
    ids = [r["task_id"] for r in reps if r.get("task_id")]
    return {
        "task": ids[0] if ids else task,
        "path": task,
        "statuses": counts,
        "degenerate": any(r.get("degenerate") for r in reps),
        "ref_ms": med_of("ref_ms"),
        "speedup_median": median(sp) if sp else None,
        "speedup_min": min(sp) if sp else None,
        "speedup_max": max(sp) if sp else None,
        "kb_speedup_median": median(kb) if kb else None,
        "unacc_cand_ms": med_of("unacc_cand_ms"),
        "unacc_ref_ms": med_of("unacc_ref_ms"),
        "unacc_stat_ms_max": max((r["unacc_stat_ms"] for r in reps
                                  if r.get("unacc_stat_ms") is not None),
                                 default=None),
        "unacc_limit_ms": med_of("unacc_limit_ms"),
        "unacc_stat_over_limit_max": max(ratios) if ratios else None,
        "reps": reps,
    }


def print_table(rows, with_kb):
    head = ("%-38s %-26s %10s  %-24s %s%9s %9s %10s %9s %6s" %
            ("task", "statuses", "ref ms", "speedup median [min, max]",
             "%-7s " % "kb" if with_kb else "", "unacc c", "unacc r",
             "stat max", "limit", "s/lim"))
    print(head)
    for w in rows:
        st = ", ".join("%s %d" % kv for kv in sorted(w["statuses"].items()))
        if w["degenerate"]:
            st += " (degen.)"
        if w["speedup_median"] is None:
            sp = "-"
        else:
            sp = "%.3f [%.3f, %.3f]" % (w["speedup_median"],
                                        w["speedup_min"], w["speedup_max"])
        kb = ("%-7s " % fmt(w["kb_speedup_median"], "%.3f")
              if with_kb else "")
        print("%-38s %-26s %10s  %-24s %s%9s %9s %10s %9s %6s" %
              (w["task"], st, fmt(w["ref_ms"]), sp, kb,
               fmt(w["unacc_cand_ms"]), fmt(w["unacc_ref_ms"]),
               fmt(w["unacc_stat_ms_max"]), fmt(w["unacc_limit_ms"]),
               fmt(w["unacc_stat_over_limit_max"], "%.2f")))


def error_stats(xs):
    e = [abs(x - 1) for x in xs]
    if not e:
        return None
    return {"n": len(e), "median": pct(e, 0.5), "p90": pct(e, 0.9),
            "max": max(e)}


def main():
    ap = argparse.ArgumentParser(
        description="A/A over KernelBench-format tasks: each task's Model "
        "evaluated as its own candidate (ModelNew).",
        epilog="Default directories: " + " ".join(DEFAULT_DIRS))
    ap.add_argument("paths", nargs="*", metavar="DIR|TASK.py",
                    help="directories of task files, or task files")
    ap.add_argument("--kforge", default="build/kforge",
                    help="the kforge binary (default build/kforge)")
    ap.add_argument("--backend", default="host", choices=["host", "cuda"])
    ap.add_argument("--reps", type=int, default=3,
                    help="evaluations per task (default 3)")
    ap.add_argument("--time-cap", type=float, default=1.0,
                    help="kforge eval --time-cap, seconds (default 1)")
    ap.add_argument("--python", help="kforge eval --python: the Python "
                    "with torch that runs the bridge")
    ap.add_argument("--protocol", choices=["kforge", "kernelbench", "both"],
                    help="kforge eval --protocol (default: kforge's)")
    ap.add_argument("--seed", type=int, help="kforge eval --seed (default: "
                    "a random seed per evaluation)")
    ap.add_argument("--batch-jobs", type=int, default=0, metavar="N",
                    help="evaluate every pair in one kforge eval --batch "
                    "--jobs N (the next pairs load while one is measured) "
                    "instead of one kforge eval each")
    ap.add_argument("--hogs", type=int, default=0,
                    help="busy-loop processes running during the whole "
                    "run (default 0)")
    ap.add_argument("--min-us", type=float, default=0.0,
                    help="also summarise |speedup-1| over references of at "
                    "least this many microseconds")
    ap.add_argument("--subclass", action="store_true",
                    help="candidates say `class ModelNew(Model): pass` "
                    "instead of `ModelNew = Model`")
    ap.add_argument("--eval-timeout", type=float, default=900.0,
                    help="seconds one kforge eval may run (default 900)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the candidates to DIR and keep them "
                    "(default: a temporary directory, removed)")
    ap.add_argument("--json", metavar="OUT", help="write every row and "
                    "evaluation, and the summary, to OUT")
    a = ap.parse_args()

    if a.reps < 1:
        usage_error("--reps must be at least 1, not %d" % a.reps)
    if a.hogs < 0:
        usage_error("--hogs must be 0 or more, not %d" % a.hogs)
    if not a.time_cap > 0:
        usage_error("--time-cap must be positive, not %g" % a.time_cap)
    if not (os.path.isfile(a.kforge) and os.access(a.kforge, os.X_OK)):
        usage_error("no kforge binary at %s: build it (make, or make "
                    "BUILD=DIR) or name it with --kforge" % a.kforge)
    if a.python and not (os.path.isfile(a.python)
                         and os.access(a.python, os.X_OK)):
        usage_error("--python %s: no such executable" % a.python)
    tasks = find_tasks(a.paths or DEFAULT_DIRS)
    if a.json:
        d = os.path.dirname(os.path.abspath(a.json))
        if not os.path.isdir(d):
            usage_error("--json %s: no directory %s" % (a.json, d))

    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        root = a.keep
    else:
        root = tempfile.mkdtemp(prefix="kforge-kb-aa-")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    hogs = start_hogs(a.hogs)
    rows = []
    try:
        if a.batch_jobs:
            cands = [make_candidate(t, root, a.subclass) for t in tasks]
            pairs = [(t, c) for t, c in zip(tasks, cands)
                     for _ in range(a.reps)]
            recs = evaluate_batch(a, pairs)
            for k, t in enumerate(tasks):
                reps = recs[k * a.reps:(k + 1) * a.reps]
                for i, r in enumerate(reps):
                    r["rep"] = i
                rows.append(task_row(t, reps))
            tasks = []
        for t in tasks:
            cand = make_candidate(t, root, a.subclass)
            reps = []
            for i in range(a.reps):
                r = evaluate(a, t, cand)
                r["rep"] = i
                reps.append(r)
                print("%-45s rep %d  %-28s ref %s ms  speedup %s  "
                      "(%.1f s)" % (t, i, status_key(r),
                                    fmt(r.get("ref_ms")),
                                    fmt(r.get("speedup")
                                        if r.get("speedup") is not None
                                        else r.get("kb_speedup")),
                                    r["wall_s"]),
                      file=sys.stderr, flush=True)
            rows.append(task_row(t, reps))
    except KeyboardInterrupt:
        print("interrupted: the tasks done so far follow", file=sys.stderr)
    finally:
        stop_hogs(hogs)
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)

    allr = [r for w in rows for r in w["reps"]]
    with_kb = any(w["kb_speedup_median"] is not None for w in rows)
    print("A/A over %d KernelBench-format tasks, %d evaluations: --backend "
          "%s --reps %d --time-cap %g%s%s%s, %d CPU hog(s); %s, %s, %d cores"
          % (len(rows), len(allr), a.backend, a.reps, a.time_cap,
             " --batch-jobs %d" % a.batch_jobs if a.batch_jobs else "",
             " --protocol " + a.protocol if a.protocol else "",
             " --python " + a.python if a.python else "", a.hogs, started,
             socket.gethostname(), os.cpu_count() or 0))
    print()
    print_table(rows, with_kb)
    print()
    print("unacc c, unacc r: the candidate's and the reference's unaccounted "
          "time (median over the reps, ms)\n"
          "stat max: the largest statistic the unaccounted_time check "
          "compared; limit: its limit (median);\n"
          "s/lim: the largest ratio of the two (the check rejects above 1)")
    print()
    bad = [(w, r) for w in rows for r in w["reps"] if r["status"] != "ok"]
    print("not ok: %d of %d A/A pairs" % (len(bad), len(allr)))
    for w, r in bad:
        print("  %s rep %d (seed %s): %s" % (w["task"], r["rep"],
                                            r.get("seed") or "-",
                                            status_key(r)))
        print("    " + (r.get("reason") or "(no reason given)"))
    ok_sp = [r["speedup"] for r in allr
             if r["status"] == "ok" and r.get("speedup") is not None]
    summary = {"evaluations": len(allr), "not_ok": len(bad),
               "no_result": sum(r["status"] == "no_result" for r in allr),
               "abs_speedup_minus_1": error_stats(ok_sp)}
    lines = [("kforge", "", ok_sp)]
    ok_kb = [r["kb_speedup"] for r in allr
             if r["status"] == "ok" and r.get("kb_speedup") is not None]
    if ok_kb:
        summary["abs_kb_speedup_minus_1"] = error_stats(ok_kb)
        lines.append(("kernelbench", "", ok_kb))
    if a.min_us > 0:
        big = [r for r in allr if r["status"] == "ok" and
               r.get("speedup") is not None and r.get("ref_ms") is not None
               and r["ref_ms"] * 1e3 >= a.min_us]
        summary["min_us"] = a.min_us
        summary["abs_speedup_minus_1_min_us"] = error_stats(
            [r["speedup"] for r in big])
        lines.append(("kforge", ", references >= %g us" % a.min_us,
                      [r["speedup"] for r in big]))
    for proto, what, xs in lines:
        s = error_stats(xs)
        if s:
            print("|speedup-1| (%s protocol, the %d ok evaluations%s): "
                  "median %.2f %%, p90 %.2f %%, max %.2f %%" %
                  (proto, s["n"], what, 100 * s["median"], 100 * s["p90"],
                   100 * s["max"]))
        else:
            print("|speedup-1| (%s protocol%s): no ok, timed evaluation"
                  % (proto, what))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"started": started, "host": socket.gethostname(),
                       "cores": os.cpu_count(), "argv": sys.argv,
                       "backend": a.backend, "reps": a.reps,
                       "time_cap": a.time_cap, "hogs": a.hogs,
                       "protocol": a.protocol or "kforge",
                       "summary": summary, "rows": rows}, f, indent=1)
        print("wrote %s" % a.json)
    return 1 if summary["no_result"] else 0


if __name__ == "__main__":
    sys.exit(main())
