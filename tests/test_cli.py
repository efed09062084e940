"""The command line, run as a user would: in a subprocess."""
import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "turbometrics.cli", *args], capture_output=True, text=True,
                          timeout=600)


def test_bench_quick_prints_every_metric_against_its_baselines():
    out = run("bench", "--quick", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    for case in ("perplexity f32", "topk_accuracy k=5", "topk k=50"):
        assert case in out.stdout
    assert "slow" in out.stdout and "read" in out.stdout
    assert "sklearn" in out.stdout and "torch" in out.stdout  # the oracles of the test extra


def test_bench_rejects_bad_flags():
    out = run("bench", "--quick", "--full")
    assert out.returncode == 2 and "choose one of --quick and --full" in out.stderr
    assert run("frobnicate").returncode == 2
