#!/usr/bin/env python3
"""backend-latency.py: volt's server on epoll against io_uring, at the same fixed request rate.

    crates/bench/scripts/backend-latency.py --rate 40000 --runs 3 --seconds 10

For each run and each backend (interleaved: epoll, uring, epoll, uring, ...) it starts
`target/release/examples/techempower --workers 1` pinned to CPU 0 with `VOLT_IO` set, loads it
with `volt bench --rate R -c 64` pinned to CPU 1 (TechEmpower's headers; latency measured from each
request's scheduled send time, so stalls are not hidden), and prints the corrected percentiles,
the server's CPU time per request and the error count, then medians per backend. Both release
binaries must be built (`cargo build --release -p volt --example techempower -p volt-cli`).
Python 3 standard library only.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SERVER = ROOT / "target" / "release" / "examples" / "techempower"
VOLT = ROOT / "target" / "release" / "volt"
CLK_TCK = os.sysconf("SC_CLK_TCK")
HEADERS = [
    "Host: tfb-server",
    "Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7",
    "Connection: keep-alive",
]


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"server on port {port} did not start")


def one_run(io: str, rate: int, seconds: int) -> dict:
    port = free_port()
    env = dict(os.environ, VOLT_IO=io)
    server = subprocess.Popen(
        ["taskset", "-c", "0", str(SERVER), "--addr", f"127.0.0.1:{port}", "--workers", "1"],
        env=env, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port)
        url = f"http://127.0.0.1:{port}/plaintext"
        headers = [a for h in HEADERS for a in ("-H", h)]
        base = ["taskset", "-c", "1", str(VOLT), "bench", "-q", "-t", "1", "-c", "64"] + headers
        subprocess.run(base + ["-d", "2s", url], check=True, stdout=subprocess.DEVNULL)  # warm-up
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            before = cpu_ticks(server.pid)
            subprocess.run(base + ["--rate", str(rate), "-d", f"{seconds}s", "--json", out.name, url],
                           check=True, stdout=subprocess.DEVNULL)
            ticks = cpu_ticks(server.pid) - before
            report = json.load(open(out.name))["levels"][0]
    finally:
        server.terminate()
        server.wait()
    lat = report["latency_us"]
    return {"io": io, "requests": report["requests"], "errors": report["errors"]["total"],
            "rps": report["requests"] / seconds, "cpu_us": ticks / CLK_TCK * 1e6 / report["requests"],
            "p50": lat["p50"], "p99": lat["p99"], "p99.9": lat["p99.9"], "max": lat["max"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        for io in ("epoll", "uring"):
            r = one_run(io, args.rate, args.seconds)
            runs.append(r)
            print(f"run {i + 1} {io:5}  {r['rps']:9,.0f} req/s  errors {r['errors']}  "
                  f"CPU {r['cpu_us']:.2f} µs/req  p50 {r['p50']} p99 {r['p99']} "
                  f"p99.9 {r['p99.9']} max {r['max']} µs", flush=True)
    print(f"\nmedians of {args.runs} runs at {args.rate:,} req/s, -c 64, corrected latency (µs):")
    print("| backend | req/s | server CPU µs/req | p50 | p99 | p99.9 | max | errors |")
    print("|---|---|---|---|---|---|---|---|")
    for io in ("epoll", "uring"):
        rs = [r for r in runs if r["io"] == io]
        med = {k: statistics.median(r[k] for r in rs) for k in ("rps", "cpu_us", "p50", "p99", "p99.9", "max")}
        span = {k: (min(r[k] for r in rs), max(r[k] for r in rs)) for k in ("p99", "p99.9")}
        print(f"| {io} | {med['rps']:,.0f} | {med['cpu_us']:.2f} | {med['p50']:.0f} | "
              f"{med['p99']:.0f} [{span['p99'][0]}–{span['p99'][1]}] | "
              f"{med['p99.9']:.0f} [{span['p99.9'][0]}–{span['p99.9'][1]}] | {med['max']:.0f} | "
              f"{sum(r['errors'] for r in rs)} |")


if __name__ == "__main__":
    main()
