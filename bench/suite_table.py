#!/usr/bin/env python3
"""suite_table.py: turns `kforge suite --json` output into the markdown tables
of docs/benchmarks.md: one row per candidate (expected and actual status),
and one row per task with its best candidate measured side by side with the
reference in the same evaluation.

usage: kforge suite --json [...] > suite.json; bench/suite_table.py suite.json
"""
import json
import sys


def cell(x, fmt):
    return fmt % x if x is not None else "-"


def main():
    with open(sys.argv[1]) as f:
        results = json.load(f)
    print("| task | candidate | expected | got | check |")
    print("|---|---|---|---|---|")
    for r in results:
        cand = r["candidate"]["path"].rsplit("/", 1)[-1]
        mark = "" if r["status"] == r["expected"] else " **(unexpected)**"
        print("| %s | %s | %s | %s%s | %s |" % (
            r["task"]["id"], cand, r["expected"], r["status"], mark,
            r.get("check", "")))
    print()
    print("| task | timing dims | reference ms | best candidate | candidate ms"
          " | speedup [95% CI] | bound | roofline fraction (cand / ref)"
          " | compile s (cand / ref) |")
    print("|---|---|---|---|---|---|---|---|---|")
    best = {}
    for r in results:
        t = r.get("timing")
        if r["status"] != "ok" or not t:
            continue
        tid = r["task"]["id"]
        if tid not in best or (t["speedup"]["median"] >
                               best[tid]["timing"]["speedup"]["median"]):
            best[tid] = r
    for tid in sorted(best):
        r = best[tid]
        t, rf, c = r["timing"], r.get("roofline", {}), r["compile"]
        dims = " ".join("%s=%d" % kv for kv in r["task"]["dims"].items())
        sp = t["speedup"]
        print("| %s | %s | %.4f | %s | %.4f | %.2fx [%.2f, %.2f] | %s | %s / %s"
              " | %.2f / %.2f |" % (
                  tid, dims, t["reference"]["median"],
                  r["candidate"]["path"].rsplit("/", 1)[-1],
                  t["candidate"]["median"], sp["median"], sp["ci95"][0],
                  sp["ci95"][1], rf.get("bound") or "-",
                  cell(rf.get("fraction"), "%.3f"),
                  cell(rf.get("reference_fraction"), "%.3f"),
                  c["candidate"]["seconds"], c["reference"]["seconds"]))


if __name__ == "__main__":
    main()
