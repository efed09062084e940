"""A time-boxed fuzz of every compiled kernel, run against the AddressSanitizer + UndefinedBehaviorSanitizer
build by tests/test_sanitizers.py (not collected otherwise: see tests/conftest.py).

Any out-of-bounds access, use after free or undefined behaviour aborts the process, which fails the
driver. The values are checked only loosely here (parity with the oracles is the rest of the suite);
what matters is that every path of the C++ code sees junk, extremes, empty and huge-ish inputs.
TURBOMETRICS_FUZZ_EXAMPLES sets the examples per test; the count that ran is written to
TURBOMETRICS_FUZZ_COUNT for the driver's summary.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turbometrics as tm
from turbometrics._ext import _dense

if os.environ.get("TURBOMETRICS_SANITIZED_TREE"):  # the driver's build, not the installed package
    assert tm.__file__.startswith(os.environ["TURBOMETRICS_SANITIZED_TREE"]), tm.__file__

EXAMPLES = int(os.environ.get("TURBOMETRICS_FUZZ_EXAMPLES", "100"))
COUNT = {"n": 0}
fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="session", autouse=True)
def _write_count():
    yield
    path = os.environ.get("TURBOMETRICS_FUZZ_COUNT")
    if path:
        with open(path, "w") as f:
            f.write(str(COUNT["n"]))


def _ran():
    COUNT["n"] += 1


# Texts from the characters the tokenizers treat specially: ASCII punctuation and digits, whitespace of
# every kind, Latin-1, CJK, kana, symbols, astral code points, surrogate-free junk, newlines (sentences).
ALPHABET = st.sampled_from(
    list("ab cd.,-'\"&;<>!?0123456789\n\t\u00a0\u2028\u3000")
    + [
        "&quot;",
        "&amp;",
        "<skipped>",
        "-\n",
        "’s",
        "\u00e9",
        "\u4e2d",
        "\u6587",
        "\u3042",
        "\u30a2",
        "\u20ac",
        "\U0001f600",
        "\U00020001",
        "\uff01",
        "\u3002",
        "\ufffd",
    ]
)
TEXT = st.lists(ALPHABET | st.characters(blacklist_categories=("Cs",)), max_size=60).map("".join)
CORPUS = st.integers(1, 6).flatmap(
    lambda n: st.tuples(
        st.lists(TEXT, min_size=n, max_size=n),
        st.lists(st.lists(TEXT | st.none(), min_size=n, max_size=n), min_size=1, max_size=3),
    )
)


def _with_a_reference(hyps, refs):
    """Every segment needs one reference present: fill the first stream's gaps."""
    first = [r if r is not None else "" for r in refs[0]]
    return hyps, [first] + refs[1:]


@fuzz
@given(
    CORPUS,
    st.sampled_from(["13a", "intl", "zh", "char", "none"]),
    st.booleans(),
    st.integers(1, 6),
    st.sampled_from(["exp", "floor", "add-k", "none"]),
)
def test_bleu(corpus, tok, lower, order, smooth):
    _ran()
    hyps, refs = _with_a_reference(*corpus)
    s = tm.corpus_bleu(hyps, refs, tokenize=tok, lowercase=lower, max_ngram_order=order, smooth_method=smooth)
    seg = tm.segment_bleu(hyps, refs, tokenize=tok, lowercase=lower, max_ngram_order=order)
    assert 0 <= s.score <= 100 + 1e-9 and seg.shape == (len(hyps),)  # exp(mean of logs) can round past 100
    prepared = tm.prepare_references(refs, tokenize=tok, lowercase=lower)
    assert (
        tm.corpus_bleu(hyps, prepared, tokenize=tok, lowercase=lower, max_ngram_order=order, smooth_method=smooth).score
        == s.score
    )
    for h in hyps[:2]:
        tm.tokenize(h, tok)


@fuzz
@given(CORPUS, st.integers(0, 6), st.integers(0, 3), st.booleans(), st.booleans(), st.booleans())
def test_chrf(corpus, nc, nw, whitespace, eps, lower):
    _ran()
    hyps, refs = _with_a_reference(*corpus)
    if nc + nw == 0:
        nc = 1
    s = tm.corpus_chrf(
        hyps, refs, char_order=nc, word_order=nw, whitespace=whitespace, eps_smoothing=eps, lowercase=lower
    )
    assert 0 <= s.score <= 100 + 1e-9


@fuzz
@given(CORPUS, st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_ter(corpus, normalized, no_punct, asian, case):
    _ran()
    hyps, refs = _with_a_reference(*corpus)
    s = tm.corpus_ter(hyps, refs, normalized=normalized, no_punct=no_punct, asian_support=asian, case_sensitive=case)
    assert s.score >= 0


ROUGE_TYPES = ["rouge1", "rouge2", "rouge4", "rougeL", "rougeLsum"]


@fuzz
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.tuples(
            st.lists(TEXT, min_size=n, max_size=n),
            st.lists(st.lists(TEXT, min_size=1, max_size=3), min_size=n, max_size=n),
        )
    ),
    st.lists(st.sampled_from(ROUGE_TYPES), min_size=1, max_size=5, unique=True),
    st.booleans(),
    st.booleans(),
)
def test_rouge(pairs, types, stem, split):
    _ran()
    preds, refs = pairs
    out = tm.rouge(preds, refs, rouge_types=types, use_stemmer=stem, split_summaries=split)
    for t in types:
        assert np.all((out[t].fmeasure >= 0) & (out[t].fmeasure <= 1))


@fuzz
@given(
    st.lists(
        st.tuples(st.lists(st.integers(-(2**40), 2**40), max_size=200), st.lists(st.integers(-5, 5), max_size=200)),
        min_size=1,
        max_size=6,
    )
)
def test_lcs(pairs):
    _ran()
    a = [np.array(x, np.int64) for x, _ in pairs]
    b = [np.array(y, np.int64) for _, y in pairs]
    out = tm.lcs_length(a, b)
    assert np.all(out <= np.minimum([len(x) for x in a], [len(y) for y in b]))


@fuzz
@given(
    st.lists(st.tuples(TEXT | st.text(max_size=150), TEXT | st.text(max_size=150)), max_size=6),
    st.booleans(),
    st.sampled_from([-1, 0, 1, 2, 2**20 - 1]),
)
def test_edit_distances(pairs, words, sub):
    _ran()
    from turbometrics._ext import _text

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    out = _text.edit_distances(a, b, words, sub, 2)
    if sub == 1 or sub == -1:  # unit costs: at most the longer sequence
        assert np.all(out[:, 0] <= np.maximum(out[:, 1], out[:, 2]))
    ids = [np.array([ord(c) for c in x], np.intc) for x in a + b]
    for x, y in zip(ids[: len(a)], ids[len(a) :]):
        bits, dp = _text.levenshtein_pair(x % 1024, (y * 7) % 1024)
        assert bits == dp


# ---------------------------------------------------------------- dense kernels, on every SIMD path

DTYPES = ["float16", "float32", "float64", "bfloat16"]
SPECIAL = [0.0, -0.0, 1e30, -1e30, 65504.0, -65504.0, 3e38, 1e-40, np.inf, -np.inf, np.nan]


@st.composite
def logits(draw):
    """(B, T, V) logits of a dtype, some with special values, maybe a strided view; targets in range."""
    dtype = draw(st.sampled_from(DTYPES))
    b, t, v = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((b, t, v)) * draw(st.sampled_from([1.0, 10.0, 1000.0]))
    for _ in range(draw(st.integers(0, 4))):
        x[rng.integers(b), rng.integers(t), rng.integers(v)] = draw(st.sampled_from(SPECIAL))
    if draw(st.booleans()):  # a view whose rows are not contiguous with each other
        x = np.concatenate([x, x], axis=2)[:, :, :v]
    if dtype == "bfloat16":
        import ml_dtypes

        x = x.astype(ml_dtypes.bfloat16)
    else:
        with np.errstate(over="ignore"):
            x = x.astype(dtype)
    targets = rng.integers(0, v, (b, t))
    targets[rng.random((b, t)) < 0.2] = -100
    return x, targets


@pytest.mark.parametrize("path", _dense.SUPPORTED)
@fuzz
@given(logits(), st.integers(1, 8))
def test_dense(path, data, k):
    _ran()
    _dense.set_path(path)
    try:
        x, t = data
        v = x.shape[-1]
        nll = tm.token_nll(x, t, ignore_index=-100, num_threads=2)
        assert nll.shape == t.shape
        if (t != -100).any():
            tm.perplexity(x, t, ignore_index=-100, reduction="sequence")
        rows = x.reshape(-1, v)
        k = min(k, v)
        vals, idx = tm.topk(rows, k, largest=bool(k % 2), sorted=bool(k % 3))
        assert idx.shape == (rows.shape[0], k) and np.all((idx >= 0) & (idx < v))
        flat_t = np.clip(t.reshape(-1), 0, v - 1)
        if rows.dtype.name in ("float32", "float64"):
            tm.topk_accuracy(rows, flat_t, k=k)
            tm.target_rank(rows, flat_t)
            tm.mean_reciprocal_rank(rows, flat_t, ties=("sklearn", "optimistic", "pessimistic")[k % 3])
            tm.perplexity_from_hidden(rows[:, :8].astype(np.float64), np.ones((5, min(v, 8))), flat_t % 5, chunk=64)
    finally:
        _dense.set_path(None)


@fuzz
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=600))
def test_exact_sums(values):
    _ran()
    from turbometrics._exact import ExactSum

    v = np.array(values, np.float64)
    s = ExactSum().add(v)._bins()  # the compiled bins, not only the small-sum fsum
    s.merge(ExactSum().add(v[::-1])).value()


# ---------------------------------------------------------------- resampling kernels


@pytest.mark.parametrize("path", _dense.SUPPORTED)
@fuzz
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 40),
    st.integers(0, 1100),
    st.integers(1, 12),
    st.sampled_from(["int32", "int64", "float64"]),
    st.sampled_from([1, 3, 2**20, 2**31 - 1]),
)
def test_resample_sums(path, seed, r, n, k, dtype, most):
    """Every shape (runs and blocks cut anywhere, a tile of any width), counts large enough for the
    64-bit lanes, values at the extremes of their type."""
    _ran()
    _dense.set_path(path)
    try:
        rng = np.random.default_rng(seed)
        counts = rng.integers(0, most, (r, n), dtype=np.int64).astype(np.int32)
        if dtype == "float64":
            cols = rng.standard_normal((k, n)) * 10.0 ** rng.integers(-300, 300, (k, n))
            cols[rng.random((k, n)) < 0.05] = np.inf
        else:
            info = np.iinfo(dtype)
            cols = rng.integers(info.min, info.max, (k, n), dtype=dtype, endpoint=True)
        for threads in (1, 3):
            out = _dense.resample_sums(cols, counts, threads)
            assert out.shape == (r, k)
    finally:
        _dense.set_path(None)


@pytest.mark.parametrize("path", _dense.SUPPORTED)
@fuzz
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 624),
    st.sampled_from([1, 2, 3, 1000, 2**31 + 1, 2**32, 2**32 + 1, 2**63 - 1]),
    st.integers(0, 2000),
    st.integers(1, 300),
    st.integers(0, 10),
    st.integers(0, 30),
    st.integers(1, 40),
)
def test_legacy_rng(path, seed, pos, n, total, rows, m, samples, per):
    """The MT19937 stream from any position, every bounded-integer branch, the means of any shape (indices
    out of range refused), batches of any size."""
    _ran()
    _dense.set_path(path)
    try:
        key = np.random.RandomState(seed % 2**32).get_state()[1].copy()
        out = np.empty(total, np.int64)
        pos = _dense.legacy_randint(key, pos, n - 1, out)
        assert 0 <= pos <= 624 and np.all((out >= 0) & (out < n))
        matrix = np.random.default_rng(seed).standard_normal((rows + 1, m))
        means, pos = _dense.legacy_bootstrap_means(key, pos, matrix, samples, per, 2)
        assert means.shape == (samples, m) and 0 <= pos <= 624
        idx = out[: (total // 7) * 7].reshape(-1, 7) if total >= 7 else np.zeros((1, 3), np.int64)
        try:
            assert _dense.legacy_ordered_means(matrix, idx, 2).shape == (idx.shape[0], m)
        except ValueError:
            assert idx.max() > rows
    finally:
        _dense.set_path(None)
