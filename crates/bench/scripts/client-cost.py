#!/usr/bin/env python3
"""client-cost.py: what a load generator costs per request, wrk against `volt bench`.

    crates/bench/scripts/client-cost.py --volt target/release/volt \
        --server nginx=127.0.0.1:18081 --server volt=127.0.0.1:18082 --runs 3 --seconds 10

The servers must already be running (pinned to CPU 0 by whoever started them). For every
server and scenario, the two clients run in turn (wrk, volt, wrk, volt, ...), each pinned to
CPU 1 with one thread, after a warm-up run of the same client. Per run it records the responses
the client counted, its own CPU time (utime + stime from wait4), and the server's CPU time
(/proc/PID/stat of the process listening on the port), and prints medians with min-max, and the
ratio of volt's client CPU per request to wrk's.

Scenarios: keep-alive with 64 connections, and TechEmpower's pipelined x16 with 256
connections (wrk through bench/wrk/pipeline.lua). TechEmpower's request headers for both.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WRK_SCRIPTS = ROOT / "bench" / "wrk"
CLK_TCK = os.sysconf("SC_CLK_TCK")
HEADERS = [
    "Host: tfb-server",
    "Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7",
    "Connection: keep-alive",
]
SCENARIOS = {
    "keepalive-c64": (64, 1),
    "pipelined-c256x16": (256, 16),
}


def listening_pid(port: int) -> int:
    """The pid of the process with a listening socket on `port` (from /proc, no tools)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    raise SystemExit(f"nothing listens on port {port}")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def run_client(cmd: list) -> tuple:
    """Runs a client to completion: (stdout, client CPU seconds)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0:4]} failed:\n{text}")
    return text, usage.ru_utime + usage.ru_stime


def wrk_cmd(url: str, conns: int, depth: int, seconds: int) -> list:
    cmd = ["taskset", "-c", "1", "wrk", "-t", "1", "-c", str(conns), "-d", f"{seconds}s", "--timeout", "8"]
    for h in HEADERS:
        cmd += ["-H", h]
    cmd.append(url)
    if depth > 1:
        cmd += ["-s", str(WRK_SCRIPTS / "pipeline.lua"), "--", str(depth)]
    else:
        cmd += ["-s", str(WRK_SCRIPTS / "report.lua")]
    return cmd


def volt_cmd(volt: str, url: str, conns: int, depth: int, seconds: int, json_path: str) -> list:
    cmd = ["taskset", "-c", "1", volt, "bench", "-q", "-t", "1", "-c", str(conns), "-d", f"{seconds}s",
           "--timeout", "8s", "--pipeline", str(depth), "--json", json_path]
    for h in HEADERS:
        cmd += ["-H", h]
    cmd.append(url)
    return cmd


def measure(client: str, args, url: str, conns: int, depth: int, seconds: int, server_pid: int) -> dict:
    json_path = tempfile.mktemp(suffix=".json")
    if client == "wrk":
        cmd = wrk_cmd(url, conns, depth, seconds)
    else:
        cmd = volt_cmd(args.volt, url, conns, depth, seconds, json_path)
    before = cpu_ticks(server_pid)
    out, client_cpu = run_client(cmd)
    server_cpu = (cpu_ticks(server_pid) - before) / CLK_TCK
    if client == "wrk":
        r = json.loads(re.search(r"^BENCH_JSON (.*)$", out, re.M).group(1))
        responses, duration = r["requests"], r["duration_us"] / 1e6
        errors = sum(r["errors"].values())
    else:
        r = json.loads(Path(json_path).read_text())
        os.unlink(json_path)
        responses, duration, errors = r["requests"], r["duration_s"], r["errors"]["total"]
    return {
        "client": client, "responses": responses, "rps": responses / duration, "errors": errors,
        "client_us_per_req": client_cpu * 1e6 / max(responses, 1),
        "server_us_per_req": server_cpu * 1e6 / max(responses, 1),
    }


def spread(values: list) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--volt", default=str(ROOT / "target" / "release" / "volt"))
    ap.add_argument("--server", action="append", required=True, help="NAME=HOST:PORT")
    ap.add_argument("--path", default="/plaintext")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", help="write every run here")
    args = ap.parse_args()

    everything = []
    for spec in args.server:
        name, addr = spec.split("=", 1)
        url = f"http://{addr}{args.path}"
        pid = listening_pid(int(addr.rsplit(":", 1)[1]))
        for scenario, (conns, depth) in SCENARIOS.items():
            runs = []
            for i in range(args.runs):
                for client in ("wrk", "volt"):
                    measure(client, args, url, conns, depth, args.warmup, pid)  # warm-up
                    r = measure(client, args, url, conns, depth, args.seconds, pid)
                    r.update(server=name, scenario=scenario, run=i)
                    print(f"  {name:8} {scenario:18} {client:5} {r['rps']:>11,.0f} rps  "
                          f"client {r['client_us_per_req']:.3f} µs/req  server {r['server_us_per_req']:.3f} "
                          f"µs/req  errors {r['errors']}", flush=True)
                    runs.append(r)
            everything += runs
            by = {c: [r for r in runs if r["client"] == c] for c in ("wrk", "volt")}
            ratio = [v["client_us_per_req"] / w["client_us_per_req"] for w, v in zip(by["wrk"], by["volt"])]
            print(f"{name} {scenario}:")
            for c in ("wrk", "volt"):
                print(f"    {c:5} rps {spread([r['rps'] for r in by[c]])}  client µs/req "
                      f"{spread([r['client_us_per_req'] for r in by[c]])}  server µs/req "
                      f"{spread([r['server_us_per_req'] for r in by[c]])}")
            print(f"    volt/wrk client CPU per request: {spread(ratio)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
