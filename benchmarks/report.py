"""Run the benchmark suites and print a Markdown report of speed-ups.

    python benchmarks/report.py            # issue-sized inputs (several GB; a few minutes)
    python benchmarks/report.py --quick    # small inputs
    python benchmarks/report.py --no-openmp  # also: the perplexity and BLEU cases in a build without OpenMP
    python benchmarks/report.py --only simd,threads  # only those case groups (see _bench.Case.groups)
    python benchmarks/report.py --json a.json b.json  # report earlier runs together (e.g. a GPU run)

The dense cases run once per SIMD path this CPU supports (TURBOMETRICS_SIMD). Writes
benchmarks/results/report.md, a chart of the speed-ups, benchmarks/results/speedups.png
(matplotlib), and the raw pytest-benchmark JSON beside them (not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


ROOT = os.path.dirname(HERE)


def run_suite(quick: bool, out_json: str, **env_extra: str) -> None:
    env = dict(os.environ, TURBOMETRICS_BENCH="quick" if quick else "full", **env_extra)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        HERE,
        "--benchmark-only",
        f"--benchmark-json={out_json}",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    subprocess.run(cmd, env=env, check=True, cwd=HERE)


def run_other_paths(quick: bool, results: str) -> list[str]:
    """The dense cases on every SIMD path below the best one; their JSON files."""
    from turbometrics._ext import _dense

    out = []
    for path in _dense.SUPPORTED[1:]:
        f = os.path.join(results, f"{'quick' if quick else 'full'}-{path}.json")
        run_suite(quick, f, TURBOMETRICS_SIMD=path, TURBOMETRICS_BENCH_ONLY="simd")
        out.append(f)
    return out


def run_without_openmp(quick: bool, results: str) -> str:
    """Build a copy of the package without OpenMP (TURBOMETRICS_OPENMP=0, as on a Mac) and run the
    perplexity and BLEU cases with it; its JSON file."""
    import shutil
    import tempfile

    sys.path.insert(0, os.path.join(ROOT, "tests"))  # the build helpers live beside the tests that use them
    from _build import build_without_openmp

    tree = tempfile.mkdtemp(prefix="turbometrics-no-openmp-")
    r = build_without_openmp(ROOT, tree)
    if r.returncode:
        sys.exit(f"the build without OpenMP failed:\n{r.stderr[-4000:]}")
    f = os.path.join(results, f"{'quick' if quick else 'full'}-no-openmp.json")
    run_suite(
        quick,
        f,
        PYTHONPATH=os.path.join(tree, "src"),
        TURBOMETRICS_BENCH_ONLY="threads",
        NUMBA_CACHE_DIR=os.path.join(tree, "numba-cache"),
    )
    shutil.rmtree(tree, ignore_errors=True)
    return f


ROLE_COLORS = {"oracle": "#1f77b4", "torch": "#ee4c2c", "baseline": "#9467bd", "slow": "#7f7f7f", "variant": "#2ca02c"}
ROLE_LABELS = {
    "oracle": "oracle (scikit-learn, torch.topk, sacrebleu, rouge-score)",
    "torch": "PyTorch",
    "baseline": "NumPy",
    "slow": "pure-Python baseline (turbometrics.slow)",
    "variant": "turbometrics, sacrebleu-compatible mode",
}


def _ours(roles: dict[str, str]) -> str | None:
    """The implementation the others are compared with: "turbometrics", or "patched" in the patch's cases
    (the library's own call under tm.patch()); None where a case has none."""
    name = next((n for n, role in roles.items() if role == "ours"), "turbometrics")
    return name if name in roles else None


def _speedups(data: dict) -> list[tuple[str, str, str, float]]:
    """(case, implementation, role, its time / turbometrics' time) for every timed comparison."""
    cases = defaultdict(dict)
    for b in data["benchmarks"]:
        info = b["extra_info"]
        if "role" in info and "kind" not in info:
            cases[info["case"]][info["impl"]] = (b["stats"]["min"] * info.get("scale", 1.0), info["role"])
    out = []
    for case, impls in cases.items():
        ours_name = _ours({n: role for n, (_, role) in impls.items()})
        if ours_name is None:
            continue
        ours = impls[ours_name][0]
        out += [(case, name, role, t / ours) for name, (t, role) in impls.items() if role in ROLE_COLORS]
    return out


def chart(data: dict, path: str) -> None:
    """Horizontal bars, log scale: how many times faster turbometrics is than each implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _speedups(data)[::-1]
    fig, ax = plt.subplots(figsize=(14, 0.3 * len(rows) + 1.5))
    ax.barh(range(len(rows)), [r[3] for r in rows], color=[ROLE_COLORS[r[2]] for r in rows])
    ax.set_yticks(range(len(rows)), [f"{c}  vs  {i}" for c, i, _, _ in rows], fontsize=7)
    ax.set_xscale("log")
    ax.axvline(1, color="black", linewidth=0.8)
    for y, r in enumerate(rows):
        ax.text(r[3], y, f" {r[3]:,.1f}x", va="center", fontsize=7)
    ax.set_xlabel("speed-up of turbometrics (their time / ours, log scale)")
    roles = [r for r in ROLE_COLORS if any(row[2] == r for row in rows)]
    ax.legend(
        [plt.Rectangle((0, 0), 1, 1, color=ROLE_COLORS[r]) for r in roles],
        [ROLE_LABELS[r] for r in roles],
        loc="lower right",
        fontsize=7,
    )
    ax.set_title(f"turbometrics speed-ups, {os.cpu_count()} threads", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(data: dict) -> str:
    m = data["machine_info"]
    lines = [
        f"Machine: {m.get('cpu', {}).get('brand_raw', m.get('processor', '?'))}, "
        f"{os.cpu_count()} cores, Python {m.get('python_version')}; "
        f"times are the best of the rounds (slow/ is scaled from a few rows). "
        f"[path]: the SIMD path of the dense kernels (TURBOMETRICS_SIMD).",
        "",
    ]
    cases = defaultdict(dict)
    memory, first, scale, lm, sync, fresh = {}, {}, [], [], {}, defaultdict(dict)
    for b in data["benchmarks"]:
        info = b["extra_info"]
        if info.get("kind") == "scale":
            scale.append(info)
        elif info.get("kind") == "lm":
            lm.append(info)
        elif info.get("kind") == "memory":
            memory[info["impl"]] = info["mib"]
        elif info.get("kind") == "sync":  # test_bench_distributed: one row per case (the last file's)
            sync[info["case"]] = info
        elif info.get("kind") == "fresh_run":  # test_bench_fresh_runs: a whole process, plain and patched
            fresh[info["case"]][info["impl"]] = info
        elif "case" not in info:  # a benchmark written before the report knew its kind: not a speed-up row
            continue
        elif info.get("kind") == "first_call":
            first = {k: v for k, v in info.items() if k != "kind"}
        else:
            cases[info["case"]][info["impl"]] = (b["stats"]["min"] * info.get("scale", 1.0), info)
    lines += ["| case | implementation | time (s) | turbometrics is | GB/s |", "|---|---|---:|---:|---:|"]
    for case, impls in cases.items():
        ours_name = _ours({n: i.get("role", "") for n, (_, i) in impls.items()})
        if ours_name is None:
            continue
        ours = impls[ours_name][0]
        for name, (t, info) in impls.items():
            if name == ours_name:
                rel = "-"
            elif info["role"] == "read":
                rel = f"{ours / t:.2f}x the read time"
            elif info["role"] == "kernel":  # the call end to end against its own kernels (per-call overhead)
                rel = f"the call is {ours / t:.2f}x its kernels"
            else:
                rel = f"{t / ours:,.1f}x faster" if t >= ours else f"{ours / t:.2f}x slower"
            gbs = (
                f"{info['bytes'] / t / 1e9:.1f}"
                if info.get("bytes") and info["role"] in ("ours", "read", "kernel")
                else ""
            )
            if gbs and info.get("peak_bytes_per_s"):  # GPU: against the card's memory bandwidth
                gbs += f" ({100 * info['bytes'] / t / info['peak_bytes_per_s']:.0f}% of peak)"
            note = f" ({info['note']})" if info.get("note") else ""
            shown = f"{t:.4f}" if t >= 0.01 else f"{t * 1e3:.3f} ms"
            lines.append(f"| {case} | {name}{note} | {shown} | {rel} | {gbs} |")
    pool = [(case, impls) for case, impls in cases.items() if "no OpenMP" in case]
    if pool:
        lines += [
            "",
            "| turbometrics, same case | OpenMP build (s) | build without OpenMP: std::thread pool (s) "
            "| pool / OpenMP |",
            "|---|---:|---:|---:|",
        ]
        for case, impls in pool:
            twin = case.replace(", no OpenMP: std::thread pool", "").replace(" [no OpenMP: std::thread pool]", "")
            if twin in cases:
                a, b = cases[twin]["turbometrics"][0], impls["turbometrics"][0]
                lines.append(f"| {twin} | {a:.4f} | {b:.4f} | {b / a:.2f} |")
    if fresh:
        lines += [
            "",
            "| other people's harness, fresh process | plain (s) | tm.patch() (s) | whole process | the call |",
            "|---|---:|---:|---:|---:|",
        ]
        for case, runs in fresh.items():
            if "plain" in runs and "patched" in runs:
                a, b = runs["plain"], runs["patched"]
                lines.append(
                    f"| {case} | {a['seconds']:.2f} | {b['seconds']:.2f} | {a['seconds'] / b['seconds']:.1f}x "
                    f"| {a['call'] / b['call']:.1f}x |"
                )
    if memory:
        lines += ["", "| perplexity: peak memory added to the input | MiB |", "|---|---:|"]
        lines += [f"| {k} | {v:,.0f} |" for k, v in memory.items()]
    if scale:
        lines += [
            "",
            "| 1,000,000 segment pairs | implementation | time (s) | peak extra memory (MiB) |",
            "|---|---|---:|---:|",
        ]
        lines += [f"| {i['case']} | {i['impl']} | {i['seconds']:.2f} | {i['extra_mib']:,.0f} |" for i in scale]
    if lm:
        lines += [
            "",
            "| language-model perplexity (model forward included) | implementation | time (s) | "
            "peak extra memory (MiB) |",
            "|---|---|---:|---:|",
        ]
        lines += [f"| {i['case']} | {i['impl']} | {i['seconds']:.2f} | {i['extra_mib']:,.0f} |" for i in lm]
    if sync:
        lines += [
            "",
            "| metric state synced across processes | turbometrics (s) | bytes a rank | gathering the "
            "inputs (s) | bytes a rank |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {c} | {i['sync_s']:.3f} | {i['bytes_per_rank']:,} | {i['naive_s']:.3f} | "
            f"{i['naive_bytes_per_rank']:,} |"
            for c, i in sync.items()
        ]
    if first:
        lines += ["", "| call made first after import, fresh process | first (s) | second (s) |", "|---|---:|---:|"]
        lines += [f"| {k} | {v['first']:.4f} | {v['second']:.4f} |" for k, v in first.items()]
    return "\n".join(lines) + "\n"


def _load(paths: list[str]) -> dict:
    """pytest-benchmark JSON files as one (the first file's machine info, every file's benchmarks)."""
    data = None
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        if data is None:
            data = d
        else:
            data["benchmarks"] += d["benchmarks"]
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated case groups: simd (dense kernels), threads")
    ap.add_argument(
        "--no-openmp",
        action="store_true",
        help="also time perplexity and BLEU in a build without OpenMP (needs Cython)",
    )
    ap.add_argument(
        "--json",
        nargs="+",
        help="report these pytest-benchmark JSON files instead of running "
        "the suites (e.g. the CPU run and a GPU run of test_bench_gpu.py)",
    )
    args = ap.parse_args()
    results = os.path.join(HERE, "results")
    os.makedirs(results, exist_ok=True)
    paths = args.json or [os.path.join(results, "quick.json" if args.quick else "full.json")]
    if not args.json:
        try:
            import pytest_benchmark  # noqa: F401
        except ImportError:
            sys.exit("benchmarks/report.py runs pytest-benchmark: pip install -e '.[bench]' first")
        run_suite(args.quick, paths[0], **({"TURBOMETRICS_BENCH_ONLY": args.only} if args.only else {}))
        paths += run_other_paths(args.quick, results)
        if args.no_openmp:
            paths.append(run_without_openmp(args.quick, results))
    data = _load(paths)
    text = report(data)
    with open(os.path.join(results, "report.md"), "w") as f:
        f.write(text)
    chart(data, os.path.join(results, "speedups.png"))
    print(text)


if __name__ == "__main__":
    main()
