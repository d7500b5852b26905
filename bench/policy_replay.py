#!/usr/bin/env python3
"""policy_replay.py: the search policies compared on the same recorded
candidates and the same budget, without a model and without measuring again.

    bench/policy_replay.py RECORDED.jsonl [--budget N] [--seeds K]
        [--policies tune,llm,mcts,islands] [--kforge build/kforge]
        [--task tasks/reduction/row_sum] [--from TUNABLE]

RECORDED is `kforge export RUN --format jsonl` of a tuner run over a KF_PARAM
grid (each candidate a point of the grid, with its measured result). Every
policy runs `kforge optimize` with KFORGE_SCORES=RECORDED, so a candidate's
result is its recorded one. The model is simulated from the same set: asked
to improve a candidate (the source a prompt shows under "Your last kernel"),
it answers with one of that point's grid neighbours (one parameter one step
along its list) drawn at random; asked for a new one, with a random point.
The tuner needs no model. For each policy it prints the best speedup after
each quarter of the budget and the evaluations it took to reach the best
recorded candidate, the mean over K seeds.
"""

import argparse
import http.server
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading

DEFINE = re.compile(r"^#define (\w+) (\S+) /\* KF_PARAM\(", re.M)


def point(source):
    return tuple(DEFINE.findall(source))


def load(path):
    """The recorded points: {point: (source, speedup)}, and the values of
    each parameter in their order."""
    pts = {}
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        if "source" not in rec:
            continue
        ev = rec.get("evaluation") or {}
        sp = ev.get("speedup") if ev.get("status") == "ok" else 0.0
        pts[point(rec["source"])] = (rec["source"], sp or 0.0)
    return pts


def neighbours(pts, p):
    out = []
    for q in pts:
        diff = [i for i in range(len(p)) if p[i] != q[i]]
        if len(diff) == 1 and len(q) == len(p):
            out.append(q)
    return out


class Model:
    def __init__(self, pts, seed):
        self.pts = pts
        self.keys = sorted(pts)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()

    def answer(self, prompt):
        with self.lock:
            focus = None
            at = prompt.find("## Your last kernel")
            if at >= 0:
                focus = point(prompt[at:at + 65536].split("```", 2)[1])
            if focus in self.pts:
                choices = neighbours(self.pts, focus) or self.keys
            else:
                choices = self.keys
            q = self.rng.choice(sorted(choices))
            return "```c\n" + self.pts[q][0] + "```\n"


def serve(model):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(
                int(self.headers.get("Content-Length", "0"))))
            text = "\n".join(m.get("content", "") for m in body["messages"])
            reply = {"choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant",
                                              "content": model.answer(text)}}],
                     "model": body.get("model", "")}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def curve(kforge, db, budget):
    """Best speedup after each evaluation of run 1."""
    out = subprocess.run([kforge, "export", "1", "--format", "jsonl",
                          "--db", db], capture_output=True, text=True,
                         check=True).stdout
    best, c = 0.0, []
    for line in out.splitlines():
        rec = json.loads(line)
        ev = rec.get("evaluation")
        if not ev:
            continue
        if ev.get("status") == "ok" and (ev.get("speedup") or 0) > best:
            best = ev["speedup"]
        c.append(best)
    while len(c) < budget:
        c.append(best)
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recorded")
    ap.add_argument("--budget", type=int, default=12)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--policies", default="tune,llm,mcts,islands")
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--task", default="tasks/reduction/row_sum")
    ap.add_argument("--from", dest="src",
                    default="tasks/reduction/row_sum/candidates/tunable.c")
    args = ap.parse_args()
    pts = load(args.recorded)
    top = max(sp for _, sp in pts.values())
    print(f"{len(pts)} recorded candidates, the best {top:.3f}x; budget "
          f"{args.budget}, {args.seeds} seeds")
    env = dict(os.environ, KFORGE_SCORES=os.path.abspath(args.recorded))
    marks = sorted({max(1, args.budget * k // 4) for k in range(1, 5)})
    print(f"{'policy':10}" + "".join(f"  best@{m:<4}" for m in marks)
          + "  evals to the best (runs that got there)")
    for pol in args.policies.split(","):
        curves, reach = [], []
        for seed in range(1, args.seeds + 1):
            with tempfile.TemporaryDirectory() as tmp:
                db = os.path.join(tmp, "k.db")
                cmd = [args.kforge, "optimize", args.task, "--policy", pol,
                       "--budget", str(args.budget), "--seed", str(seed),
                       "--db", db]
                srv = None
                if pol == "tune":
                    cmd += ["--from", args.src]
                else:
                    srv = serve(Model(pts, seed))
                    cmd += ["--model", "sim", "--base-url",
                            f"http://127.0.0.1:{srv.server_address[1]}/v1",
                            "--llm", "retries=0"]
                e = dict(env, KFORGE_CACHE=os.path.join(tmp, "cache"))
                r = subprocess.run(cmd, capture_output=True, text=True, env=e)
                if srv:
                    srv.shutdown()
                if r.returncode not in (0, 1):
                    sys.exit(f"{pol} seed {seed}: {r.stderr[-2000:]}")
                c = curve(args.kforge, db, args.budget)
                curves.append(c)
                hit = [i + 1 for i, b in enumerate(c) if b >= top]
                if hit:
                    reach.append(hit[0])
        row = f"{pol:10}"
        for m in marks:
            row += f"  {sum(c[m - 1] for c in curves) / len(curves):7.3f}x"
        mean = f"{sum(reach) / len(reach):.1f}" if reach else "-"
        row += f"  {mean} ({len(reach)}/{len(curves)})"
        print(row, flush=True)


if __name__ == "__main__":
    main()
