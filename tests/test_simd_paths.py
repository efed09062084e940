"""Every SIMD path this machine can run: the dense parity suite, forced with
TURBOMETRICS_SIMD in a subprocess per path, and the same bits from every path.
Bad values of TURBOMETRICS_SIMD are clear errors on first use, never an
illegal instruction. What ran is printed in pytest's summary (conftest.py).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import SIMD_REPORT, run_pytest

import turbometrics as tm
from turbometrics._ext import _dense

ROOT = Path(__file__).resolve().parent
# The parity suites of the dense kernels (oracles: torch, torchmetrics, scikit-learn, slow/).
DENSE_SUITE = ["test_language_model.py", "test_classification.py", "test_inputs.py"]

_not_run = [p for p in _dense.PATHS if p not in _dense.SUPPORTED]
if _not_run:
    SIMD_REPORT.append(f"compiled but not run (this CPU lacks them): {', '.join(_not_run)}")


def _run(code: str, simd: str, *args: str) -> subprocess.CompletedProcess:
    """Python code in a fresh process with TURBOMETRICS_SIMD=simd."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=dict(os.environ, TURBOMETRICS_SIMD=simd),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", _dense.SUPPORTED)
def test_dense_parity_suite_on_path(path):
    run_pytest(
        DENSE_SUITE,
        dict(os.environ, TURBOMETRICS_SIMD=path),
        SIMD_REPORT,
        f"{path}: dense parity suite ({', '.join(DENSE_SUITE)})",
    )


BATTERY = textwrap.dedent("""
    import sys
    import ml_dtypes
    import numpy as np
    import turbometrics as tm
    from turbometrics._ext import _dense

    rng = np.random.default_rng(7)
    out = {"path": np.array(_dense.active_path())}
    for v in (1, 7, 31, 32, 33, 2048, 2049, 5000):
        x = (rng.standard_normal((3, 5, v)) * 6).astype(np.float64)
        x[0, 0, : v // 2] = -np.inf                 # masked vocabulary
        x[0, 1] = np.round(x[0, 1])                  # ties
        x[1, 0, -1] = 300.0                          # far above the rest (f16: inf)
        x[1, 1] = x[1, 1] - 200.0                    # far below: the clamp path
        if v > 1:
            x[1, 2, 1] = np.nan
            x[1, 3, 0] = np.inf
        t = rng.integers(0, v, (3, 5))
        t[2, :2] = -100
        for name, a in (("f64", x), ("f32", x.astype(np.float32)), ("f16", x.astype(np.float16)),
                        ("bf16", x.astype(ml_dtypes.bfloat16))):
            out[f"nll {name} {v}"] = tm.token_nll(a, t, ignore_index=-100, num_threads=2)
            out[f"nll {name} {v} strided"] = tm.token_nll(a[:, ::-2], t[:, ::-2], ignore_index=-100)
            rows = (a.view(np.uint16) if name == "bf16" else a).reshape(15, v)  # the head's score fold, in slices
            state = (np.full(15, -np.inf), np.zeros(15), np.zeros(15, np.uint8), np.full(15, -1, np.int64))
            for v0 in range(0, v, 1000):
                code = {"f64": 3, "f32": 2, "f16": 0, "bf16": 1}[name]
                _dense.score_rows(np.ascontiguousarray(rows[:, None, v0:v0 + 1000]), code, v0, *state, 2)
            for i, part in enumerate(state):
                out[f"score {name} {v} {i}"] = part
            for k in sorted({1, min(v, 5), v}):
                for largest in (True, False):
                    val, idx = tm.topk(a, k, largest=largest)
                    out[f"topk {name} {v} {k} {largest}"] = np.asarray(idx)
        for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
            a = rng.integers(0, 50, (4, v)).astype(dt)
            out[f"topk {np.dtype(dt).name} {v}"] = tm.topk(a, min(v, 9))[1]
    big = (rng.standard_normal((16, 128256)) * 3).astype(np.float32)
    tb = rng.integers(0, 128256, 16)
    out["nll f32 vocab"] = tm.token_nll(big, tb)
    out["nll bf16 vocab"] = tm.token_nll(big.astype(ml_dtypes.bfloat16), tb)
    out["topk f32 vocab"] = tm.topk(big, 50)[1]
    out["rank f32 vocab"] = tm.target_rank(big, tb)
    from turbometrics import resampling
    counts = rng.integers(0, 4, (37, 3001)).astype(np.int32)
    for name, cols in (("int32", rng.integers(-99, 99, (10, 3001)).astype(np.int32)),
                       ("int64", rng.integers(-2 ** 40, 2 ** 40, (10, 3001))),
                       ("f64", rng.standard_normal((10, 3001)))):
        out[f"resample sums {name}"] = resampling._sums(cols, counts, 2)
    np.savez(sys.argv[1], **out)
""")


def test_every_path_gives_the_same_bits(tmp_path):
    results = {}
    for path in _dense.SUPPORTED:
        f = tmp_path / f"{path}.npz"
        r = _run(BATTERY, path, str(f))
        assert r.returncode == 0, r.stderr[-3000:]
        results[path] = dict(np.load(f))
        assert str(results[path].pop("path")) == path
    first, *others = _dense.SUPPORTED
    for path in others:
        assert results[path].keys() == results[first].keys()
        for key, want in results[first].items():
            np.testing.assert_array_equal(results[path][key], want, err_msg=f"{key}: {path} vs {first}")
    SIMD_REPORT.append(
        f"same bits on every path run here ({', '.join(_dense.SUPPORTED)}): "
        f"{len(results[first])} NLL/score/top-k/rank/resample-sum results compared"
    )


def test_an_unknown_path_is_a_clear_error_on_first_use_only():
    r = _run(
        "import turbometrics as tm, numpy as np\n"
        "tm.show_config()\n"
        # the text kernels do not use SIMD paths
        "print(tm.corpus_bleu(['the cat sat on the mat'], [['the cat sat on the mat']]).score)\n"
        "try:\n"
        "    tm.perplexity(np.zeros((2, 3)), [0, 1])\n"
        "except RuntimeError as e:\n"
        "    print('ERROR', e)\n",
        "avx9000",
    )
    assert r.returncode == 0, r.stderr
    assert "100.0" in r.stdout
    assert "ERROR TURBOMETRICS_SIMD='avx9000' is not a SIMD path of this build" in r.stdout
    assert "in use: none" in r.stdout


@pytest.mark.skipif(not _not_run, reason="this CPU runs every compiled path")
def test_a_path_the_cpu_cannot_run_is_an_error_not_an_illegal_instruction():
    r = _run("import turbometrics as tm, numpy as np\ntm.topk(np.zeros((2, 3), np.float32), 1)\n", _not_run[0])
    assert r.returncode == 1, (r.returncode, r.stderr)  # an exception, not SIGILL
    assert f"this CPU cannot run the {_not_run[0]} path" in r.stderr


@pytest.mark.parametrize("value,expect", [("", None), ("  AVX2 ", "avx2"), ("baseline", None), ("best", None)])
def test_choose_path(value, expect):
    if value.strip().lower() == "avx2" and "avx2" not in _dense.SUPPORTED:
        pytest.skip("no AVX2 here")
    got = _dense.choose_path(value)
    want = {"": _dense.SUPPORTED[0], "best": _dense.SUPPORTED[0], "baseline": _dense.PATHS[-1]}.get(value, expect)
    assert got == want


def test_show_config_names_the_path_in_use(capsys):
    tm.show_config()
    text = capsys.readouterr().out
    assert f"in use: {_dense.active_path()}" in text
    assert f"compiled: {', '.join(_dense.PATHS)}" in text
    info = tm.show_config(mode="dicts")
    assert info["SIMD paths"]["in use"] == _dense.active_path()
    assert info["threads"]["backend"] in ("OpenMP", "std::thread pool")
    assert info["turbometrics"]["version"] == tm.__version__
    with pytest.raises(ValueError, match="mode"):
        tm.show_config(mode="json")
