"""The command line, run as a user would: in a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, read_lines

import turbometrics as tm


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "turbometrics.cli", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # the whole quick benchmark
def test_bench_quick_prints_every_metric_against_its_baselines(tmp_path):
    out = run("bench", "--quick", "--repeat", "1", "--json", str(tmp_path / "bench.json"))
    assert out.returncode == 0, out.stderr
    for case in ("perplexity f32", "perplexity bf16", "perplexity f16", "topk_accuracy k=5", "topk k=50"):
        assert case in out.stdout
    assert "slow" in out.stdout and "read" in out.stdout
    assert "sklearn" in out.stdout and "torch" in out.stdout  # the oracles of the test extra
    # how to read it: the legend, times with units, and who is faster
    assert "how many times faster (or slower) turbometrics is than that row" in out.stdout
    assert "turbometrics" in out.stdout and " faster" in out.stdout and "0.0000 s" not in out.stdout
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["turbometrics"] == tm.__version__ and doc["sizes"] == "quick" and doc["config"]["CPU"]["cores"]
    rows = doc["rows"]
    assert {r["role"] for r in rows} >= {"ours", "oracle", "slow", "read"}
    for r in rows:
        assert r["seconds"] > 0 and r["speedup"] == pytest.approx(r["seconds"] / r["ours_seconds"])
        assert r["case"] in out.stdout


def test_bench_times_read_in_fitting_units():
    from turbometrics._bench import format_seconds

    assert [format_seconds(t) for t in (3.2e-7, 2.87e-5, 8.12e-4, 0.0287, 1.93, 123.4)] == [
        "0.32 us",
        "28.7 us",
        "812 us",
        "28.7 ms",
        "1.93 s",
        "123 s",
    ]


def test_version():
    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"turbometrics {tm.__version__}"


def test_bench_rejects_bad_flags():
    out = run("bench", "--quick", "--full")
    assert out.returncode == 2 and "choose one of --quick and --full" in out.stderr
    assert run("frobnicate").returncode == 2


# ---------------------------------------------------------------- metric commands

WMT = DATA / "wmt17-en-de"
REF = str(WMT / "newstest2017.ref.de")
KIT, FBK = str(WMT / "KIT.4950.hyp.de"), str(WMT / "FBK.4870.hyp.de")


def sacrebleu(*args):
    out = subprocess.run(
        [sys.executable, "-m", "sacrebleu.sacrebleu", *args], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["-w", "3"],
        ["--confidence"],
        ["-lc", "-tok", "intl", "-w", "2"],
        ["-s", "floor", "--confidence", "--seed", "7"],
    ],
)
def test_bleu_prints_what_sacrebleu_prints(flags, monkeypatch):
    # our --seed is sacrebleu's SACREBLEU_SEED
    theirs = [f for i, f in enumerate(flags) if f != "--seed" and (i == 0 or flags[i - 1] != "--seed")]
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    if "--seed" in flags:
        monkeypatch.setenv("SACREBLEU_SEED", flags[flags.index("--seed") + 1])
    ours = run("bleu", REF, "-i", KIT, *flags)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == sacrebleu(REF, "-i", KIT, "-f", "text", *theirs)
    assert run("bleu", REF, "-i", KIT, "--json", *flags).stdout == sacrebleu(REF, "-i", KIT, *theirs)


def test_chrf_from_stdin_and_json():
    with open(KIT, "rb") as fh:
        ours = subprocess.run(
            [sys.executable, "-m", "turbometrics.cli", "chrf", REF, "--word-order", "2", "--confidence", "--json"],
            stdin=fh,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == sacrebleu(REF, "-i", KIT, "-m", "chrf", "--chrf-word-order", "2", "--confidence")


def test_paired_tests_report_sacrebleus_p_values():
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    named = [(p, read_lines(Path(p))) for p in (FBK, KIT)]
    _, scores = PairedTest(named, {"BLEU": BLEU()}, [read_lines(WMT / "newstest2017.ref.de")], test_type="bs")()
    out = run("bleu", REF, "-i", FBK, KIT, "--paired-bs", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["signature"].startswith("nrefs:1|bs:1000|seed:12345|")
    assert got["systems"][1]["p_value"] == scores["BLEU"][1].p_value
    text = run("bleu", REF, "-i", FBK, KIT, "--paired-ar", "--paired-ar-n", "500").stdout
    assert "Baseline:" in text and "ar:500|seed:12345" in text


def test_rouge_and_array_commands(tmp_path, summaries):
    preds, refs = summaries
    (tmp_path / "p.txt").write_text("\n".join(preds) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    out = run("rouge", str(tmp_path / "r.txt"), "-i", str(tmp_path / "p.txt"), "--stem", "--json")
    assert out.returncode == 0, out.stderr
    expect = tm.rouge([p.rstrip() for p in preds], [r.rstrip() for r in refs], use_stemmer=True)
    assert json.loads(out.stdout)["rougeL"]["fmeasure"] == float(expect["rougeL"].fmeasure.mean())
    ci = json.loads(
        run("rouge", str(tmp_path / "r.txt"), "-i", str(tmp_path / "p.txt"), "--confidence", "--json").stdout
    )
    assert ci["rouge1"]["low"]["fmeasure"] < ci["rouge1"]["mid"]["fmeasure"] < ci["rouge1"]["high"]["fmeasure"]

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 7, 40)).astype(np.float32)
    targets = rng.integers(0, 40, (5, 7))
    np.save(tmp_path / "logits.npy", logits)
    np.save(tmp_path / "targets.npy", targets)
    np.savez(tmp_path / "lm.npz", logits=logits, targets=targets)
    for args in ([str(tmp_path / "logits.npy"), str(tmp_path / "targets.npy")], [str(tmp_path / "lm.npz")]):
        out = run("perplexity", *args, "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["value"] == tm.perplexity(logits, targets)
    np.savez(tmp_path / "cls.npz", scores=logits.reshape(-1, 40), targets=targets.reshape(-1))
    out = run("topk-accuracy", str(tmp_path / "cls.npz"), "-k", "1", "5", "--json")
    assert json.loads(out.stdout)["value"] == list(
        tm.topk_accuracy(logits.reshape(-1, 40), targets.reshape(-1), k=(1, 5))
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["bleu", "missing.txt", "-i", KIT], "no such file: missing.txt"),
        (["bleu", REF, "-i", KIT, "-tok", "moses"], "tokenize"),
        (["bleu", REF, "-i", KIT, "--paired-bs"], "baseline and at least one system"),
        (["chrf", REF, "-i", __file__], "lines but the reference"),
        (["perplexity", __file__], ".npz"),
        (["topk-accuracy", "nope.npz"], "no such file"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert message in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert out.stdout == ""


def test_bad_files_exit_2_with_one_line(tmp_path):
    import gzip

    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "cut.gz").write_bytes(gzip.compress(b"a b c\n" * 100)[:30])
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04" + b"junk" * 10)
    np.save(tmp_path / "zero.npy", np.float32(3.0))
    np.save(tmp_path / "t.npy", np.int64(1))
    np.save(tmp_path / "none.npy", np.zeros((0, 5), np.float32))
    np.save(tmp_path / "t0.npy", np.zeros(0, np.int64))
    cases = [
        (["bleu", REF, "-i", KIT, "-e", "no-such-encoding"], "unknown encoding"),
        (["bleu", REF, "-i", str(tmp_path / "cut.gz")], "truncated .gz"),
        (["bleu", str(tmp_path / "empty.txt"), "-i", str(tmp_path / "empty.txt")], "holds no line"),
        (["rouge", str(tmp_path / "empty.txt"), "-i", str(tmp_path / "empty.txt")], "holds no line"),
        (["topk-accuracy", str(tmp_path / "bad.npz")], "not a readable .npz"),
        (["perplexity", str(tmp_path / "zero.npy"), str(tmp_path / "t.npy")], "0-d"),
        (["topk-accuracy", str(tmp_path / "none.npy"), str(tmp_path / "t0.npy")], "scores holds no row"),
    ]
    for args, message in cases:
        out = run(*args)
        assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)


def test_a_closed_pipe_is_no_traceback():
    p = subprocess.Popen(
        [sys.executable, "-m", "turbometrics.cli", "bleu", REF, "-i", KIT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # the reader left before the score was printed (`| head -c0`)
    err = p.stderr.read().decode()
    assert p.wait(timeout=600) == 1 and "Traceback" not in err, err


def test_bad_arrays_exit_2(tmp_path):
    np.save(tmp_path / "s.npy", np.zeros((4, 3)))
    np.save(tmp_path / "t.npy", np.array([0, 1, 2, 7]))
    out = run("topk-accuracy", str(tmp_path / "s.npy"), str(tmp_path / "t.npy"), "-k", "1")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "targets" in out.stderr


def test_progress_bar_only_on_a_terminal(tmp_path):
    import fcntl
    import os
    import pty
    import struct
    import termios

    lines = read_lines(Path(KIT)) * 20  # 60k segments: more than one chunk
    (tmp_path / "h.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(read_lines(Path(REF)) * 20) + "\n", encoding="utf-8")
    args = [sys.executable, "-m", "turbometrics.cli", "bleu", str(tmp_path / "r.txt"), "-i", str(tmp_path / "h.txt")]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a fresh pty is 0 columns wide
    try:
        out = subprocess.run(args, stdout=subprocess.PIPE, stderr=slave, text=True, timeout=600)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
    assert out.returncode == 0 and "seg" in err.decode()  # tqdm's bar, on the terminal
    piped = run("bleu", str(tmp_path / "r.txt"), "-i", str(tmp_path / "h.txt"))
    assert piped.stdout == out.stdout and piped.stderr == ""
