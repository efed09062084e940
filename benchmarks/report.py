"""Run the benchmark suites and print a Markdown report of speed-ups.

    python benchmarks/report.py            # issue-sized inputs (several GB; a few minutes)
    python benchmarks/report.py --quick    # small inputs
    python benchmarks/report.py --json results.json   # report an earlier run

Writes benchmarks/results/report.md (and the raw pytest-benchmark JSON beside it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


def run_suite(quick: bool, out_json: str) -> None:
    env = dict(os.environ, TURBOMETRICS_BENCH="quick" if quick else "full")
    cmd = [sys.executable, "-m", "pytest", HERE, "--benchmark-only", f"--benchmark-json={out_json}", "-q",
           "-p", "no:cacheprovider"]
    subprocess.run(cmd, env=env, check=True, cwd=HERE)


def report(data: dict) -> str:
    m = data["machine_info"]
    lines = [f"Machine: {m.get('cpu', {}).get('brand_raw', m.get('processor', '?'))}, "
             f"{os.cpu_count()} cores, Python {m.get('python_version')}; "
             f"times are the best of the rounds (slow/ is scaled from a few rows).", ""]
    cases = defaultdict(dict)
    memory, first, scale = {}, {}, []
    for b in data["benchmarks"]:
        info = b["extra_info"]
        if info.get("kind") == "scale":
            scale.append(info)
        elif info.get("kind") == "memory":
            memory[info["impl"]] = info["mib"]
        elif info.get("kind") == "first_call":
            first = {k: v for k, v in info.items() if k != "kind"}
        else:
            cases[info["case"]][info["impl"]] = (b["stats"]["min"] * info.get("scale", 1.0), info)
    lines += ["| case | implementation | time (s) | turbometrics is | GB/s |", "|---|---|---:|---:|---:|"]
    for case, impls in cases.items():
        ours = impls["turbometrics"][0]
        for name, (t, info) in impls.items():
            if name == "turbometrics":
                rel = "-"
            elif info["role"] == "read":
                rel = f"{ours / t:.2f}x the read time"
            else:
                rel = f"{t / ours:,.1f}x faster" if t >= ours else f"{ours / t:.2f}x slower"
            gbs = f"{info['bytes'] / t / 1e9:.1f}" if info.get("bytes") and info["role"] in ("ours", "read") else ""
            note = f" ({info['note']})" if info.get("note") else ""
            lines.append(f"| {case} | {name}{note} | {t:.4f} | {rel} | {gbs} |")
    if memory:
        lines += ["", "| perplexity: peak memory added to the input | MiB |", "|---|---:|"]
        lines += [f"| {k} | {v:,.0f} |" for k, v in memory.items()]
    if scale:
        lines += ["", "| 1,000,000 segment pairs | implementation | time (s) | peak extra memory (MiB) |",
                  "|---|---|---:|---:|"]
        lines += [f"| {i['case']} | {i['impl']} | {i['seconds']:.2f} | {i['extra_mib']:,.0f} |" for i in scale]
    if first:
        lines += ["", "| Numba kernel, first call in a fresh process | cold cache (s) | warm cache (s) |",
                  "|---|---:|---:|"]
        lines += [f"| {k} | {v['cold']:.3f} | {v['warm']:.3f} |" for k, v in first.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="report this pytest-benchmark JSON instead of running the suites")
    args = ap.parse_args()
    results = os.path.join(HERE, "results")
    os.makedirs(results, exist_ok=True)
    path = args.json or os.path.join(results, "quick.json" if args.quick else "full.json")
    if not args.json:
        run_suite(args.quick, path)
    with open(path) as f:
        text = report(json.load(f))
    with open(os.path.join(results, "report.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
