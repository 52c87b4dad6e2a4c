#!/usr/bin/env python3
"""rate-vs-oha.py: latency at a constant rate, `volt bench --rate` against `oha -q --latency-correction`.

    crates/bench/scripts/rate-vs-oha.py --url http://127.0.0.1:18082/plaintext --rate 20000 \
        --connections 64 --runs 3 --seconds 10

Both clients pinned to CPU 1 (the server should be on CPU 0), interleaved (oha, volt, oha,
volt, ...), same URL, rate, connections and duration. Prints each run's corrected percentiles
(µs) and, for volt bench, the uncorrected service time and send lag beside them.
Python 3 standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
KEYS = ["p50", "p90", "p99", "p99.9", "max"]


def run(cmd: list) -> tuple:
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:4]} failed:\n{text}")
    return text, usage.ru_utime + usage.ru_stime


def oha(args) -> dict:
    out, cpu = run(["taskset", "-c", "1", args.oha, "-z", f"{args.seconds}s", "-c", str(args.connections),
                    "-q", str(args.rate), "--latency-correction", "--no-tui", "--output-format", "json",
                    args.url])
    d = json.loads(out[out.index("{"):])
    p = d["latencyPercentiles"]
    lat = {k: p[k] * 1e6 for k in ["p50", "p90", "p99", "p99.9"]}
    lat["max"] = d["summary"]["slowest"] * 1e6
    n = sum(d["statusCodeDistribution"].values())
    return {"tool": "oha", "latency": lat, "rps": d["summary"]["requestsPerSec"], "n": n,
            "errors": sum(d["errorDistribution"].values()), "cpu_us_per_req": cpu * 1e6 / max(n, 1)}


def volt(args) -> dict:
    path = tempfile.mktemp(suffix=".json")
    _, cpu = run(["taskset", "-c", "1", args.volt, "bench", "-q", "-t", "1", "-c", str(args.connections),
                  "--rate", str(args.rate), "-d", f"{args.seconds}s", "--json", path, args.url])
    d = json.loads(Path(path).read_text())
    os.unlink(path)
    return {"tool": "volt", "latency": {k: d["latency_us"][k] for k in KEYS},
            "service": {k: d["service_time_us"][k] for k in KEYS},
            "lag": {k: d["send_lag_us"][k] for k in KEYS},
            "rps": d["rps"], "n": d["requests"], "errors": d["errors"]["total"],
            "cpu_us_per_req": cpu * 1e6 / max(d["requests"], 1)}


def row(label: str, values: dict) -> str:
    return f"    {label:22}" + "".join(f"{values[k]:>10.0f}" for k in KEYS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--rate", type=int, required=True)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--volt", default=str(ROOT / "target" / "release" / "volt"))
    ap.add_argument("--oha", default=os.path.expanduser("~/.cargo/bin/oha"))
    args = ap.parse_args()
    print(f"rate {args.rate} req/s, {args.connections} connections, {args.seconds}s; latency in µs")
    print(f"    {'':22}" + "".join(f"{k:>10}" for k in KEYS))
    results = []
    for i in range(args.runs):
        for tool in (oha, volt):
            r = tool(args)
            results.append(r)
            head = f"{r['tool']} #{i + 1} corrected"
            print(row(head, r["latency"]) + f"   {r['rps']:,.0f} rps, {r['errors']} errors, "
                  f"client {r['cpu_us_per_req']:.2f} µs/req", flush=True)
            if r["tool"] == "volt":
                print(row(f"volt #{i + 1} service", r["service"]))
                print(row(f"volt #{i + 1} send lag", r["lag"]))
    for tool in ("oha", "volt"):
        runs = [r for r in results if r["tool"] == tool]
        med = {k: statistics.median(r["latency"][k] for r in runs) for k in KEYS}
        print(row(f"{tool} median corrected", med))
        if tool == "volt":
            print(row("volt median service", {k: statistics.median(r["service"][k] for r in runs) for k in KEYS}))
        print(f"    {tool} client CPU µs/req median {statistics.median(r['cpu_us_per_req'] for r in runs):.2f}")


if __name__ == "__main__":
    main()
