#!/usr/bin/env python3
"""serve_load.py: a load test of `kforge serve` on loopback (standard library).

N concurrent clients post /v1/score requests for T seconds. Each request
holds K items on a small built-in task (y = 2x over 4096 floats): half
correct kernels, each source unique so that each is compiled, a quarter
wrong, a quarter replies with no code. A 503 is backpressure: the client
waits Retry-After (at most --max-wait s) and sends the same request again,
until T is over (a request still refused then was never accepted: it is
counted apart, not lost).

Prints throughput, latency p50/p99 of answered requests, 503s seen and
items lost: an item is lost when its request failed any other way, when its
answer is missing or malformed, or when its result is not in the store.

    python3 bench/serve_load.py --clients 8 --seconds 30
    python3 bench/serve_load.py --url http://127.0.0.1:8471 --problem ID

Without --url it starts build/kforge-serve itself on a free port with a
temporary store and the built-in task, and stops it at the end.

--step N sends one training step instead: N rollouts in groups of --group
(one prompt each), all at once and each alone in its own /v1/openrlhf
request, as OpenRLHF's agent does (openrlhf/utils/agent.py, one
`_fetch_rewards_via_http([query], [prompt], [label])` per rollout), with
OpenRLHF's client limits (180 s total, 5 tries 1 s apart, Retry-After not
read). The server keeps its default --queue, --workers and connections
unless they are given. Prints the 503s, the rollouts whose reward never
came (lost), the infra_error ones and the latencies:

    python3 bench/serve_load.py --step 512 --group 8 [--across]

--across starts the server with --openrlhf-group-size GROUP: the rollouts of
a prompt are then scored as one group across their requests, and the table
adds the groups answered before they were whole.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TASK = {
    "description": "Load test task: y = 2 * x over float32.",
    "dims": {"N": 4096},
    "hidden_dims": [{"N": 100}, {"N": 777}],
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N"],
                "dist": ["normal", "uniform"]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": ["N"]}],
    "tolerance": {"float32": {"atol": 1e-5, "rtol": 1e-5}},
    "flops": "N",
    "bytes": "8*N",
}

KERNEL = """#include <kforge/kernel.h>
/* %s */
int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
             void *stream)
{
    (void)n_in; (void)n_out; (void)stream;
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t i = 0; i < kf_numel(&in[0]); i++)
        y[i] = %s * x[i];
    return 0;
}
"""


def make_task(root):
    d = os.path.join(root, "bench", "double")
    os.makedirs(d)
    with open(os.path.join(d, "task.json"), "w") as f:
        json.dump(TASK, f)
    with open(os.path.join(d, "reference.c"), "w") as f:
        # written otherwise than the candidates: a completion that is the
        # reference up to comments is not scored as a kernel
        f.write((KERNEL % ("reference", "2")).replace(
            "y[i] = 2 * x[i];", "y[i] = x[i] + x[i];"))
    return "bench/double"


def completion(rng, tag):
    r = rng.random()
    if r < 0.5:
        return "Here is the kernel:\n```c\n" + KERNEL % (tag, "2") + "```\n"
    if r < 0.75:
        return "```c\n" + KERNEL % (tag, "3") + "```"
    return f"I would multiply each element by two ({tag})."


def post(url, body, timeout):
    req = urllib.request.Request(url + "/v1/score",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.load(r), None
    except urllib.error.HTTPError as e:
        return e.code, None, e.headers.get("Retry-After")


KEYS = {"id", "problem_id", "reward", "status", "compiled", "correct",
        "speedup", "times", "feedback", "metrics"}


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []
        self.items = 0
        self.requests = 0
        self.busy = 0
        self.lost = 0
        self.refused = 0  # items of requests still refused at the end
        self.errors = {}
        self.statuses = {}
        self.candidates = []  # (item id, candidate id) of answered items


def client(n, url, problem, k, deadline, args, st):
    rng = random.Random(n)
    seq = 0
    while time.monotonic() < deadline:
        items = []
        for i in range(k):
            seq += 1
            tag = f"client {n} item {seq} {rng.random()}"
            items.append({"id": f"c{n}-{seq}", "problem_id": problem,
                          "completion": completion(rng, tag)})
        body = {"items": items}
        while True:
            t0 = time.monotonic()
            try:
                code, ans, retry = post(url, body, args.timeout)
            except Exception as e:  # connection failure: lost
                code, ans, retry = -1, None, None
                err = type(e).__name__
            took = time.monotonic() - t0
            if code == 503:
                with st.lock:
                    st.busy += 1
                if time.monotonic() >= deadline:
                    break  # refused, nothing accepted: not lost
                time.sleep(min(float(retry or 1), args.max_wait))
                continue
            break
        with st.lock:
            if code == 503:
                st.refused += k
                continue
            if code != 200:
                st.lost += k
                key = str(code) if code != -1 else err
                st.errors[key] = st.errors.get(key, 0) + 1
                continue
            got = {a.get("id"): a for a in ans.get("items", [])}
            for it in items:
                a = got.get(it["id"])
                if a is None or not KEYS <= set(a):
                    st.lost += 1
                    continue
                st.items += 1
                st.candidates.append(a["metrics"].get("candidate_id"))
                st.statuses[a["status"]] = st.statuses.get(a["status"], 0) + 1
            st.requests += 1
            st.latencies.append(took)


def run_threads(threads, url, start=None):
    """Runs the client threads to the end; the wall time from start (or
    now) and the server's /v1/stats then."""
    start = time.monotonic() if start is None else start
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    with urllib.request.urlopen(url + "/v1/stats") as r:
        return wall, json.load(r)


def post_openrlhf(url, body, timeout):
    req = urllib.request.Request(url + "/v1/openrlhf",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, json.load(r)


def rollout(url, problem, prompt, text, st, out):
    """One rollout as OpenRLHF's client sends it: up to 5 tries, 1 s apart,
    each bounded by the 180 s total."""
    body = {"query": [prompt + text], "prompts": [prompt],
            "labels": [problem]}
    t0 = time.monotonic()
    for attempt in range(5):
        left = 180 - (time.monotonic() - t0)
        if left <= 0:
            break
        try:
            code, ans = post_openrlhf(url, body, left)
        except urllib.error.HTTPError as e:
            code, ans = e.code, None
        except Exception as e:  # timeout, reset: OpenRLHF tries again
            code, ans = type(e).__name__, None
        if code == 200:
            out.update(ans=ans, took=time.monotonic() - t0, tries=attempt + 1)
            return
        with st.lock:
            key = str(code)
            st.errors[key] = st.errors.get(key, 0) + 1
            if code == 503:
                st.busy += 1
        time.sleep(1)
    out.update(ans=None, took=time.monotonic() - t0, tries=5)


def step_mode(args, url, problem, db, proc, tmp):
    rng = random.Random(1)
    st = Stats()
    jobs = []
    for g in range((args.step + args.group - 1) // args.group):
        prompt = (f"Problem {g}: write kf_entry computing y = 2 * x over "
                  f"float32.\n")
        for k in range(min(args.group, args.step - g * args.group)):
            jobs.append((prompt, completion(rng, f"group {g} sample {k} "
                                                 f"{rng.random()}"), {}))
    threads = [threading.Thread(target=rollout,
                                args=(url, problem, p, t, st, o))
               for p, t, o in jobs]
    wall, stats = run_threads(threads, url)
    lost = infra = correct = compiled = 0
    lat = []
    for _, text, o in jobs:
        a = o.get("ans")
        rewards = a.get("rewards") if a else None
        if not rewards or len(rewards) != 1 or rewards[0] is None:
            lost += 1
            continue
        lat.append(o["took"])
        infra += int(a["extra_logs"]["infra_error"][0])
        correct += int(a["extra_logs"]["correct"][0])
        compiled += int(a["extra_logs"]["compiled"][0])
    with_code = sum(1 for _, text, _o in jobs if "```" in text)
    stored = None
    if proc:
        proc.terminate()
        proc.wait(timeout=60)
    if db:
        con = sqlite3.connect(db)
        stored = con.execute(
            "SELECT COUNT(*) FROM evaluations e JOIN candidates c ON "
            "e.candidate = c.id JOIN runs r ON c.run = r.id "
            "WHERE r.policy = 'serve'").fetchone()[0]
        if os.environ.get("SERVE_LOAD_DEBUG"):
            for row in con.execute("SELECT e.status, COUNT(*) FROM "
                                   "evaluations e GROUP BY e.status"):
                print("store:", row)
        con.close()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [
        ("rollouts x group", f"{args.step} in groups of {args.group}, "
                             "one per /v1/openrlhf request, all at once"),
        ("server", (f"queue {stats.get('queue_capacity')}, "
                    f"{stats.get('workers')} workers, time cap "
                    f"{args.time_cap} s") if not args.url else url),
        ("duration (s)", f"{wall:.1f}"),
        ("503 answers", str(st.busy)),
        ("rollouts without a reward (lost)", str(lost)),
        ("rewards that are infra_error (deadline)", str(infra)),
        ("correct / compiled / with code",
         f"{correct} / {compiled} / "
         f"{sum(1 for _, text, _o in jobs if '```' in text)}"),
        ("rollout latency p50 / p99 / max (s)",
         f"{pct(lat, 50):.1f} / {pct(lat, 99):.1f} / "
         f"{max(lat) if lat else float('nan'):.1f}"),
        ("evaluations stored / rollouts (with code)",
         f"{'-' if stored is None else stored} / {args.step} "
         f"({with_code})"),
        ("server: evaluations, deadline misses, mean s",
         f"{stats.get('evaluations')}, {stats.get('deadline_misses')}, "
         f"{stats.get('mean_eval_seconds', 0):.2f}"),
    ]
    if args.across:
        rows.append(("groups answered incomplete / still open",
                     f"{stats.get('groups_incomplete')} / "
                     f"{stats.get('groups_open')}"))
    if st.errors:
        rows.append(("failed tries", json.dumps(st.errors)))
    print("| metric | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    return 1 if lost or st.busy else 0


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[i]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running server (default: start one)")
    ap.add_argument("--problem", help="problem id (with --url)")
    ap.add_argument("--db", help="the server's store, to check (with --url)")
    ap.add_argument("--server", default="build/kforge-serve")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--items", type=int, default=4, help="items a request")
    ap.add_argument("--workers", type=int, default=None,
                    help="the server's --workers (default 2)")
    ap.add_argument("--queue", type=int, default=None,
                    help="the server's --queue (default 16; with --step, "
                         "the server's own default)")
    ap.add_argument("--step", type=int, default=0,
                    help="send one training step of N rollouts instead")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--across", action="store_true",
                    help="with --step: the server groups the rollouts of "
                         "a prompt across requests "
                         "(--openrlhf-group-size GROUP)")
    ap.add_argument("--time-cap", default="0.1")
    ap.add_argument("--max-wait", type=float, default=2.0,
                    help="longest wait after a 503 (s)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    if args.clients < 1 or args.clients > 1024 or args.seconds <= 0 or \
            args.seconds > 3600 or args.items < 1:
        ap.error("--clients 1..1024, --seconds up to 3600, --items >= 1")

    tmp = None
    proc = None
    url, problem, db = args.url, args.problem, args.db
    if not url:
        tmp = tempfile.mkdtemp(prefix="kforge-load-")
        problem = make_task(tmp)
        db = os.path.join(tmp, "serve.db")
        port_file = os.path.join(tmp, "port")
        if not args.step:
            args.workers = args.workers or 2
            args.queue = args.queue or 16
        cmd = [args.server, "--port", "0", "--port-file", port_file,
               "--tasks", tmp, "--db", db, "--time-cap", args.time_cap,
               "--trials", "5"]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        if args.queue:
            cmd += ["--queue", str(args.queue)]
        if args.step and args.across:
            cmd += ["--openrlhf-group-size", str(args.group)]
        proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        with open(port_file) as f:
            url = f"http://127.0.0.1:{int(f.read())}"
    elif not problem:
        ap.error("--problem is needed with --url")
    if args.step:
        return step_mode(args, url, problem, db, proc, tmp)

    st = Stats()
    start = time.monotonic()
    deadline = start + args.seconds
    threads = [threading.Thread(target=client,
                                args=(n, url, problem, args.items, deadline,
                                      args, st))
               for n in range(args.clients)]
    wall, stats = run_threads(threads, url, start)

    stored = None
    if db:
        if proc:
            proc.terminate()
            proc.wait(timeout=60)
        # every answered item's candidate is in the store, evaluated
        con = sqlite3.connect(db)
        have = {row[0] for row in con.execute(
            "SELECT c.id FROM candidates c JOIN runs r ON c.run = r.id "
            "JOIN evaluations e ON e.candidate = c.id "
            "WHERE r.policy = 'serve'")}
        con.close()
        stored = sum(1 for c in st.candidates if c in have)
        st.lost += st.items - stored
    elif proc:
        proc.terminate()
        proc.wait(timeout=60)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)

    lat = st.latencies
    rows = [
        ("clients x items/request", f"{args.clients} x {args.items}"),
        ("server", f"{args.workers} workers, queue {args.queue}, "
                   f"time cap {args.time_cap} s" if not args.url else url),
        ("duration (s)", f"{wall:.1f}"),
        ("requests answered", str(st.requests)),
        ("items scored", str(st.items)),
        ("throughput (items/s)", f"{st.items / wall:.2f}"),
        ("throughput (requests/s)", f"{st.requests / wall:.2f}"),
        ("latency p50 (s)", f"{pct(lat, 50):.2f}"),
        ("latency p99 (s)", f"{pct(lat, 99):.2f}"),
        ("503 (backpressure)", str(st.busy)),
        ("items refused at the end (503, never accepted)", str(st.refused)),
        ("lost", str(st.lost)),
        ("answered items found in the store",
         "-" if stored is None else str(stored)),
        ("statuses", ", ".join(f"{k} {v}"
                               for k, v in sorted(st.statuses.items()))),
        ("mean evaluation (s)", f"{stats.get('mean_eval_seconds', 0):.2f}"),
    ]
    if st.errors:
        rows.append(("failed requests", json.dumps(st.errors)))
    print("| metric | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    return 1 if st.lost else 0


if __name__ == "__main__":
    sys.exit(main())
