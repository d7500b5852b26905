"""kforge_client: a standard-library client of `kforge serve` (docs/api.md).

The trainer glue in this directory (verl, TRL, OpenRLHF) sits on it. The
server's address comes from the url argument, else $KFORGE_URL, else
http://127.0.0.1:8471. A full queue (503) is retried after Retry-After.
"""
import asyncio
import concurrent.futures
import functools
import json
import os
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8471"


def server_url(url=None):
    return (url or os.environ.get("KFORGE_URL") or DEFAULT_URL).rstrip("/")


def without_nul(v):
    """v with NUL characters taken out of its strings: a model's text can
    hold them, and kforge serve refuses a body with one (400
    nul_in_string) rather than read a completion only up to it."""
    if isinstance(v, str):
        return v.replace("\x00", "")
    if isinstance(v, list):
        return [without_nul(x) for x in v]
    if isinstance(v, dict):
        return {k: without_nul(x) for k, x in v.items()}
    return v


def request(method, path, body=None, url=None, timeout=3600, retries=20):
    """One call; returns the decoded JSON answer. Raises KforgeError on a
    4xx/5xx other than a 503, which is retried (at most `retries` times)."""
    data = None if body is None else json.dumps(without_nul(body)).encode()
    for attempt in range(retries + 1):
        req = urllib.request.Request(
            server_url(url) + path, data=data, method=method,
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            if e.code == 503 and attempt < retries:
                time.sleep(float(e.headers.get("Retry-After") or 1))
                continue
            raise KforgeError(e.code, text) from None
    raise AssertionError("unreachable")


class KforgeError(Exception):
    def __init__(self, status, body):
        super().__init__(f"kforge serve answered {status}: {body}")
        self.status = status
        try:
            self.error = json.loads(body).get("error", {})
        except ValueError:
            self.error = {"message": body}


def queue_capacity(url=None):
    """The most items one request may hold (the server's --queue)."""
    return int(request("GET", "/v1/stats", url=url)["queue_capacity"])


def score(items, reward=None, url=None, deadline_s=None, max_items=None):
    """POST /v1/score. items: dicts with id, problem_id and completion (or
    code), optionally group_id, group_size, turn. Returns the answers, in
    the order of items.

    A batch of more items than one request may hold (max_items, else the
    server's queue capacity, asked only then) is sent as several requests
    at once; each group gets its group_size, so a group split between
    requests is still scored whole (docs/api.md, "Groups")."""
    def send(part):
        body = {"items": part}
        if reward is not None:
            body["reward"] = reward
        if deadline_s is not None:
            body["deadline_s"] = deadline_s
        return request("POST", "/v1/score", body, url=url)["items"]

    cap = max_items
    if cap is None and len(items) > 256:
        cap = queue_capacity(url)
    if cap is None or len(items) <= cap:
        return send(items)
    sizes = {}
    for it in items:
        g = it.get("group_id")
        if g is not None:
            sizes[g] = sizes.get(g, 0) + 1
    items = [dict(it) for it in items]
    for it in items:
        g = it.get("group_id")
        if g is not None and "group_size" not in it:
            it["group_size"] = sizes[g]
    parts = [items[i:i + cap] for i in range(0, len(items), cap)]
    with concurrent.futures.ThreadPoolExecutor(len(parts)) as ex:
        answers = list(ex.map(send, parts))
    return [a for part in answers for a in part]


_POOL = None


def _pool():
    # Threads of its own: a caller's default executor (32 threads at most)
    # would hold every rollout of a group waiting for the others.
    global _POOL
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(
            max_workers=int(os.environ.get("KFORGE_CLIENT_THREADS") or 4096),
            thread_name_prefix="kforge")
    return _POOL


async def score_async(items, **kwargs):
    """score() as a coroutine, in a thread of the client's own pool."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        _pool(), functools.partial(score, items, **kwargs))


def as_float(reward, infra=0.0):
    """A reward for trainers that take numbers only: null (the server's
    failure, not the model's) becomes `infra`."""
    return infra if reward is None else float(reward)
