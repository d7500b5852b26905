#!/usr/bin/env python3
"""llm_server.py: a scripted OpenAI-compatible chat-completions server for
kforge's tests. It listens on 127.0.0.1 on a port it picks and prints, plays
the replies of a JSON script in order, records every request it gets, and
exits by itself after a timeout. Standard library only.

    llm_server.py SCRIPT.json --log REQUESTS.jsonl [--timeout SECONDS]

SCRIPT is {"steps": [STEP, ...], "rules": [RULE, ...]}. A request that a
rule matches gets that rule's reply, as often as it comes: a RULE is a STEP
with "when", a list of strings that the request's messages must all contain,
and "unless", a list of strings none of which they may contain; the first
rule that matches answers. Other requests take the steps in order: request k
gets step k, and a request past the last step gets HTTP 410. Rules make a
model whose reply depends on the prompt alone, so that a policy's choices
decide what it is answered. The script's own "delay_ms" delays every
request before it takes a step or rule, and a request whose client has gone
by then takes none (a test that kills its client loses no step). A STEP is
an object with any of:
    status        HTTP status (default 200)
    delay_ms      wait this long before answering
    headers       extra response headers, {"Retry-After": "1"}
    content       the text of every choice (as many choices as the
                  request's "n")
    contents      a list of texts, one choice each
    finish_reason default "stop"
    huge_bytes    the content is this many 'x' bytes
    body          a raw body sent as is (malformed JSON, an error object)
    no_length     send no Content-Length and close the connection after the
                  body, so that the client learns the size only as it reads
Each request is appended to the log as one JSON line:
{"method", "path", "headers" (names lower-case), "body" (parsed JSON, or the
raw text when it does not parse)}.
"""

import argparse
import http.server
import json
import os
import select
import socket
import sys
import threading
import time


def prompt_text(request):
    if not isinstance(request, dict):
        return ""
    msgs = request.get("messages")
    if not isinstance(msgs, list):
        return ""
    return "\n".join(m.get("content", "") for m in msgs
                     if isinstance(m, dict)
                     and isinstance(m.get("content"), str))


def rule_matches(rule, text):
    return (all(w in text for w in rule.get("when", []))
            and not any(u in text for u in rule.get("unless", [])))


class Script:
    def __init__(self, steps, log_path, rules=(), delay_ms=0):
        self.steps = steps
        self.delay_ms = delay_ms
        self.rules = list(rules)
        self.next = 0
        self.lock = threading.Lock()
        self.log = open(log_path, "a", encoding="utf-8")

    def take(self, record):
        with self.lock:
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()
            text = prompt_text(record.get("body"))
            for rule in self.rules:
                if rule_matches(rule, text):
                    return rule
            k = self.next
            self.next += 1
            return self.steps[k] if k < len(self.steps) else None


def completion(step, request):
    if "body" in step:
        return step["body"].encode("utf-8")
    n = request.get("n", 1) if isinstance(request, dict) else 1
    if not isinstance(n, int) or n < 1:
        n = 1
    if "contents" in step:
        texts = step["contents"]
    elif "huge_bytes" in step:
        texts = ["x" * int(step["huge_bytes"])]
    else:
        texts = [step.get("content", "")] * n
    model = request.get("model", "") if isinstance(request, dict) else ""
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": t},
            "finish_reason": step.get("finish_reason", "stop"),
        }
        for i, t in enumerate(texts)
    ]
    reply = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {"prompt_tokens": 11, "completion_tokens": 22,
                  "total_tokens": 33},
    }
    return json.dumps(reply).encode("utf-8")


def client_gone(conn):
    try:
        r, _, _ = select.select([conn], [], [], 0)
        return bool(r) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def make_handler(script):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length).decode("utf-8", "replace")
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            record = {
                "method": "POST",
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
            if script.delay_ms:
                time.sleep(script.delay_ms / 1000.0)
                if client_gone(self.connection):
                    self.close_connection = True
                    return
            step = script.take(record)
            if step is None:
                step = {"status": 410,
                        "body": '{"error": {"message": "script exhausted"}}'}
            time.sleep(step.get("delay_ms", 0) / 1000.0)
            data = completion(step, body)
            try:
                self.send_response(step.get("status", 200))
                self.send_header("Content-Type", "application/json")
                for k, v in step.get("headers", {}).items():
                    self.send_header(k, v)
                if step.get("no_length"):
                    self.send_header("Connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                for i in range(0, len(data), 65536):
                    self.wfile.write(data[i:i + 65536])
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def do_GET(self):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--log", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    with open(args.script, encoding="utf-8") as f:
        spec = json.load(f)
    script = Script(spec.get("steps", []), args.log, spec.get("rules", []),
                    spec.get("delay_ms", 0))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             make_handler(script))
    server.daemon_threads = True
    # Stop by itself whatever the client does.
    timer = threading.Timer(args.timeout, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
