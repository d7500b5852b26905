#!/usr/bin/env python3
"""The farm on Redis Streams on one machine: throughput with 1..N local
workers (`kforge farm worker`) on a loopback redis-server, beside the
in-process farm (`kforge eval --batch --gpus W`, W evaluations at once) on
the same batch, and the queue's own cost per job, measured with a trivial
job (a task path no worker has: kf_eval answers at once with an error, so
the time is the queue's: XADD, XREADGROUP and XAUTOCLAIM, the worker's
answer-and-acknowledge transaction, the submitter's XREAD).

  bench/farm_scaling.py [--workers N] [--jobs K] [--trivial M]
                        [--kforge build/kforge]

Run from the kforge tree. Prints a markdown table (docs/benchmarks.md).
"""
import argparse, json, os, re, shutil, signal, socket, subprocess, sys
import tempfile, time

TASK = "tests/fixtures/rowsum"
CAND = "tests/fixtures/rowsum/candidates/same.c"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(d, port):
    p = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--dir", d, "--appendonly", "yes", "--appendfsync", "everysec",
         "--save", "", "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"],
                          capture_output=True, text=True).stdout.strip() \
                == "PONG":
            return p
        time.sleep(0.05)
    sys.exit("redis-server did not start")


def batch_file(d, name, task, n):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        for _ in range(n):
            f.write(f"{task} {CAND}\n")
    return path


def workers(a, url, n, env):
    return [subprocess.Popen(
        [a.kforge, "farm", "worker", "--redis", url, "--name", f"bench{i}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(n)]


def stop(procs):
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def submit(a, url, batch, env):
    cmd = [a.kforge, "eval", "--batch", batch, "--redis", url,
           "--no-timing", "--trials", "5", "--seed", "1", "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    m = re.search(r"farm: (\d+) jobs, (\d+) answered", p.stderr)
    if not m or m.group(1) != m.group(2):
        sys.exit("submission failed: " + p.stderr[-2000:])
    res = json.loads(p.stdout)
    evals = [r["farm"]["eval_s"] for r in res if r]
    return wall, evals


def local(a, batch, w, env):
    cmd = [a.kforge, "eval", "--batch", batch, "--gpus", str(w),
           "--no-timing", "--trials", "5", "--seed", "1", "--json"]
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=100,
                    help="evaluations per run")
    ap.add_argument("--trivial", type=int, default=1000,
                    help="trivial jobs for the queue's cost")
    ap.add_argument("--kforge", default="build/kforge")
    a = ap.parse_args()
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not installed (make deps)")
    d = tempfile.mkdtemp(prefix="kforge-farm-bench-")
    port = free_port()
    url = f"redis://127.0.0.1:{port}"
    env = dict(os.environ, KFORGE_CACHE=os.path.join(d, "cache"))
    redis = start_redis(d, port)
    try:
        real = batch_file(d, "real", TASK, a.jobs)
        trivial = batch_file(d, "trivial", "tests/fixtures/no_such_task",
                             a.trivial)
        local(a, batch_file(d, "warm", TASK, 1), 1, env)  # the cache
        print(f"| workers | evaluations | farm wall s | evals/s | "
              f"eval s (median) | in-process --gpus W wall s | "
              f"trivial jobs/s | queue ms/job |")
        print("|---|---|---|---|---|---|---|---|")
        for w in range(1, a.workers + 1):
            procs = workers(a, url, w, env)
            time.sleep(0.5)
            try:
                wall, evals = submit(a, url, real, env)
                twall, _ = submit(a, url, trivial, env)
            finally:
                stop(procs)
            lwall = local(a, real, w, env)
            evals.sort()
            print(f"| {w} | {a.jobs} | {wall:.2f} | {a.jobs / wall:.1f} | "
                  f"{evals[len(evals) // 2]:.3f} | {lwall:.2f} | "
                  f"{a.trivial / twall:.0f} | "
                  f"{1000 * twall / a.trivial:.2f} |")
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
