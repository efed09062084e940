"""Other people's evaluation code in fresh processes, plain and under ``tm.patch()``, in one run.

Each run is a new Python process (fresh_runs.py: imports, a cold start, the harness's own process pool),
timed from its start to its result, so the figure is what a user's evaluation run pays the first time.
The plain and patched results must be equal; extra_info holds the speed-up.

    pytest benchmarks/test_bench_fresh_runs.py --benchmark-only
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA_DIR, QUICK

HERE = Path(__file__).resolve().parent
_plain: dict = {}  # run -> the plain run's seconds and result, for the patched run's ratio


def fresh_run(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, str(HERE / "fresh_runs.py"), *args], capture_output=True, text=True, timeout=3600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _bench(benchmark, group: str, args: list[str], patched: bool) -> None:
    if DATA_DIR is None:
        pytest.skip("the shared test data is not there (TURBOMETRICS_DATA)")
    benchmark.group = group
    res = benchmark.pedantic(fresh_run, args=(args + (["patched"] if patched else []),), rounds=1, iterations=1)
    benchmark.extra_info.update(
        kind="fresh_run",
        case=group,
        seconds=res["seconds"],
        call=res["call"],
        result=res["result"],
        impl="patched" if patched else "plain",
    )
    if not patched:
        _plain[group] = res
    elif group in _plain:
        assert res["result"] == _plain[group]["result"], (res, _plain[group])
        benchmark.extra_info["speedup"] = _plain[group]["seconds"] / res["seconds"]  # the whole process
        benchmark.extra_info["call speedup"] = _plain[group]["call"] / res["call"]  # imports aside
        print(
            f"\n{group}: plain {_plain[group]['seconds']:.2f} s (call {_plain[group]['call']:.2f} s), patched "
            f"{res['seconds']:.2f} s (call {res['call']:.2f} s): {benchmark.extra_info['speedup']:.1f}x "
            f"({benchmark.extra_info['call speedup']:.1f}x)"
        )


@pytest.mark.parametrize("patched", [False, True], ids=["plain", "tm.patch()"])
@pytest.mark.parametrize("metric", ["bleu", "chrf", "ter"])
def test_lm_eval_bootstrap_stderr(benchmark, metric, patched):
    """lm-evaluation-harness 0.4.13: the corpus metric and its bootstrap_stderr (100 resamples in its Pool)."""
    pytest.importorskip("lm_eval")
    _bench(
        benchmark,
        f"lm-eval bootstrap_stderr {metric}, one WMT17 system",
        ["lm-eval-bootstrap", metric, "20" if QUICK else "100", DATA_DIR or ""],
        patched,
    )


@pytest.mark.parametrize("patched", [False, True], ids=["plain", "tm.patch()"])
def test_evaluate_rouge(benchmark, patched):
    """Hugging Face evaluate's rouge metric, its defaults, 2,000 summaries, in a fresh process."""
    pytest.importorskip("evaluate")
    _bench(
        benchmark,
        "evaluate rouge, 2,000 summaries",
        ["evaluate-rouge", "500" if QUICK else "2000", DATA_DIR or ""],
        patched,
    )
