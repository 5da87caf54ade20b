#!/usr/bin/env python3
"""Load benchmark of `steptp serve` on loopback (docs/serve.md): throughput and p50/p99 latency of
/v1/verify and /v1/score at concurrency 1, 8 and 32, and a check that every request got exactly
one response carrying its own request_id (0 lost, 0 duplicated).

A bounded client: C threads, each with one keep-alive connection, send requests back to back
for --seconds per cell. The server is started here (127.0.0.1, a free port) and always stopped.

    bench/serve_load.py build/src/steptp [--seconds 8] [--workers N] [--json] [--no-sandbox]

Admission bounds are set above the largest concurrency (every request is served, none refused
with 429); --no-sandbox runs the same cells with the job sandbox off, to measure its cost.
"""

import argparse
import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


def percentile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def run_cell(port, path, make_body, concurrency, seconds):
    ids = itertools.count()
    lock = threading.Lock()
    sent, latencies, seen, statuses = [], [], {}, {}
    stop_at = time.monotonic() + seconds

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while time.monotonic() < stop_at:
            with lock:
                rid = next(ids)
                sent.append(rid)
            body = json.dumps(dict(make_body(), request_id=rid))
            t0 = time.monotonic()
            try:
                conn.request("POST", path, body, {"Content-Type": "application/json"})
                res = conn.getresponse()
                data = res.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                continue
            dt = time.monotonic() - t0
            reply = json.loads(data)
            with lock:
                latencies.append(dt)
                statuses[res.status] = statuses.get(res.status, 0) + 1
                got = reply.get("request_id")
                seen[got] = seen.get(got, 0) + 1
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lost = sum(1 for r in sent if r not in seen)
    dup = sum(n - 1 for n in seen.values() if n > 1) + sum(1 for r in seen if r not in set(sent))
    return {"endpoint": path, "concurrency": concurrency, "requests": len(latencies),
            "throughput_rps": len(latencies) / wall, "p50_ms": 1e3 * percentile(latencies, 50),
            "p99_ms": 1e3 * percentile(latencies, 99), "lost": lost, "duplicated": dup,
            "statuses": {str(k): v for k, v in sorted(statuses.items())}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("steptp")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-sandbox", action="store_true", help="serve with --no-sandbox (the sandbox's cost)")
    a = ap.parse_args()

    cmd = [a.steptp, "serve", "--host", "127.0.0.1", "--port", "0", "--workers", str(a.workers),
           "--queue", "256", "--max-inflight-measure", "256"]
    if a.no_sandbox:
        cmd.append("--no-sandbox")
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().strip().rsplit(":", 1)[-1])
        with open(os.path.join(SHARED, "examples", "matmul.json")) as f:
            prog = json.load(f)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        conn.request("POST", "/v1/check", json.dumps({"program": prog}))
        matmul = json.loads(conn.getresponse().read())["canonical"]
        conn.close()
        wrong = matmul.replace("+A", "-A")
        ctx = {"root_program": matmul, "parent_program": matmul}
        answer = '<think>a is independent</think><answer>{"strategy": "loop_parallelization", "site": 0}</answer>'
        cells = [("/v1/verify", lambda: {"a": matmul, "b": wrong, "trials": 3}),
                 ("/v1/score", lambda: {"answer": answer, "reward_context": ctx})]
        # Warm-up: peaks benchmark, kernel cache.
        run_cell(port, "/v1/score", cells[1][1], 1, 1.0)
        rows = [run_cell(port, path, body, c, a.seconds) for path, body in cells for c in (1, 8, 32)]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print("%-11s %5s %9s %10s %9s %9s %5s %5s  %s" % ("endpoint", "conc", "requests", "req/s", "p50 ms", "p99 ms",
                                                  "lost", "dup", "statuses"))
    for r in rows:
        print("%-11s %5d %9d %10.1f %9.2f %9.2f %5d %5d  %s" % (
            r["endpoint"], r["concurrency"], r["requests"], r["throughput_rps"], r["p50_ms"], r["p99_ms"],
            r["lost"], r["duplicated"], r["statuses"]))
    if any(r["lost"] or r["duplicated"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
