#!/usr/bin/env python3
"""Drives one warm PyTorch bridge (runner/kforge_bridge.py) through several
candidates of one task, as a batch's pool does: load (warm) for the first,
then per candidate pin, trials, timing, the reference alone, end, and next for the one after.
Prints one JSON line per candidate: what the bridge reported (the load's
event, the runners' pids, the trials' errors and mismatches, the end).
Where the bridge ends (a candidate's crash), the next candidate loads in a
fresh bridge. Used by tests/kernelbench_test.c.

  bridge_warm.py BRIDGE TASK CANDIDATE...
"""
import json
import os
import struct
import subprocess
import sys


def send(p, obj):
    data = json.dumps(obj).encode()
    p.stdin.write(struct.pack("<I", len(data)) + data)
    p.stdin.flush()


def recv(p):
    head = p.stdout.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    return json.loads(p.stdout.read(n).decode())


def ask(p, obj):
    send(p, obj)
    return recv(p)


def start(bridge):
    return subprocess.Popen([sys.executable, "-B", bridge],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def main():
    bridge, task, cands = sys.argv[1], sys.argv[2], sys.argv[3:]
    p, first = None, True
    for k, cand in enumerate(cands):
        if p is None:
            p, first = start(bridge), True
        req = {"op": "load" if first else "next", "backend": "host",
               "task": task, "candidate": cand, "protocol": "kforge",
               "seed": str(1 + k), "warm": True}
        rep = ask(p, req)
        line = {"candidate": os.path.basename(cand), "op": req["op"]}
        if rep is None or rep.get("ev") == "died":
            line["load"] = "died"
        else:
            line["load"] = rep.get("ev")
            line["what"] = rep.get("what")
            line["message"] = rep.get("message")
            line["runners"] = rep.get("runners")
            line["state"] = rep.get("state")
        trials = []
        if line["load"] == "loaded":
            ask(p, {"op": "pin"})
            for t in range(3):
                r = ask(p, {"op": "trial", "index": t, "seed": str(1 + t),
                            "dists": [0], "near_zero": 0.01})
                if r is None or r.get("ev") == "died":
                    trials.append("died")
                    break
                trials.append({
                    "cand_error": r.get("cand_error"),
                    "mismatches": [o.get("mismatches")
                                   for o in r.get("outputs") or []],
                    "state": [f.get("state") for f in r.get("facts") or []
                              if f.get("state") is not None][-1:]})
            if trials and trials[-1] != "died":
                r = ask(p, {"op": "time", "seed": "7", "pairs": 4,
                            "warmup": 1})
                line["timed"] = len((r or {}).get("cand_ns") or [])
                # The reference alone: the candidate's runner ended first.
                r = ask(p, {"op": "alone", "calls": 3, "seed": "9"}) or {}
                line["alone"] = {"ev": r.get("ev"),
                                 "calls": len(r.get("ref_ns") or []),
                                 "gone": r.get("gone")}
        line["trials"] = trials
        if trials and trials[-1] == "died" or line["load"] == "died":
            p.wait()
            p = None
            print(json.dumps(line), flush=True)
            continue
        r = ask(p, {"op": "end"})
        line["ended"] = r
        print(json.dumps(line), flush=True)
        first = False
    if p is not None:
        send(p, {"op": "quit"})
        p.wait()


if __name__ == "__main__":
    main()
