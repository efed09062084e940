"""``tm.patch()``: patched libraries return what the unpatched ones return (type and value, bit for bit;
torchmetrics' perplexity: the exactly rounded value), on the real data; unpatch restores every object;
import order, the command line, verbose and strict modes."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sacrebleu
import torch
from conftest import both
from rouge_score import rouge_scorer, scoring
from sacrebleu.significance import PairedTest
from sklearn.metrics import top_k_accuracy_score
from torchmetrics.functional.text import perplexity as tm_perplexity
from torchmetrics.text import Perplexity

import turbometrics as tm
from turbometrics.patch import PatchFallbackError


@pytest.fixture
def patched():
    tm.unpatch()
    tm.patch()
    try:
        yield
    finally:
        tm.unpatch()


def same(a, b):
    """Equal values of equal types, recursively (score objects by their attributes)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        same(vars(a), vars(b))
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b, (a, b)


# --- sacrebleu --------------------------------------------------------------------------------------


def sacrebleu_corpus(wmt17, n_ter):
    ref = wmt17["ref"]
    out = []
    for hyp in wmt17["systems"].values():
        out += [
            sacrebleu.corpus_bleu(hyp, [ref]),
            sacrebleu.corpus_chrf(hyp, [ref]),
            sacrebleu.corpus_chrf(hyp, [ref], word_order=2),
            sacrebleu.corpus_ter(hyp[:n_ter], [ref[:n_ter]]),
        ]
    return [(s, repr(s)) for s in out]


@pytest.mark.slow
def test_sacrebleu_corpus_scores_on_every_wmt17_system(wmt17):
    before, after, fast = both(sacrebleu_corpus, wmt17, 300)
    same(before, after)
    assert fast == 4 * len(wmt17["systems"])


def sacrebleu_sentences(wmt17):
    ref, out = wmt17["ref"], []
    for hyp in wmt17["systems"].values():
        for i in range(0, len(ref), 150):
            out += [
                sacrebleu.sentence_bleu(hyp[i], [ref[i]]),
                sacrebleu.sentence_chrf(hyp[i], [ref[i]]),
                sacrebleu.sentence_ter(hyp[i], [ref[i]]),
                sacrebleu.raw_corpus_bleu([hyp[i]], [[ref[i]]]),
            ]
    return out


def test_sacrebleu_sentence_scores_on_every_wmt17_system(wmt17):
    before, after, fast = both(sacrebleu_sentences, wmt17)
    same(before, after)
    assert fast == len(before)


def sacrebleu_options(wmt17):
    ref, refs2 = wmt17["ref"], [wmt17["ref"], wmt17["systems"]["KIT"]]
    hyp = wmt17["systems"]["FBK"]
    metrics = [
        sacrebleu.BLEU(tokenize=t, lowercase=lc, smooth_method=s)
        for t, lc, s in [
            ("intl", True, "floor"),
            ("zh", False, "add-k"),
            ("char", False, "none"),
            ("none", True, "exp"),
        ]
    ]
    metrics += [
        sacrebleu.CHRF(char_order=4, word_order=1, beta=1, lowercase=True, whitespace=True),
        sacrebleu.CHRF(eps_smoothing=True),
        sacrebleu.TER(normalized=True, no_punct=True, case_sensitive=True),
    ]
    out = [m.corpus_score(hyp[:200], [r[:200] for r in refs2]) for m in metrics]
    cached = sacrebleu.BLEU(references=refs2)  # the cached-references form, many systems
    out += [cached.corpus_score(h, None) for h in wmt17["systems"].values()] + [str(cached.get_signature())]
    var = [[r if i % 3 else None for i, r in enumerate(ref)], ref]  # a varying number of references
    varying = sacrebleu.BLEU()
    out += [varying.corpus_score(hyp, var), str(varying.get_signature())]
    return [(s, repr(s)) for s in out]


@pytest.mark.slow
def test_sacrebleu_options_cached_and_multi_references(wmt17):
    before, after, fast = both(sacrebleu_options, wmt17)
    same(before, after)


def sacrebleu_significance(wmt17):
    ref, systems = wmt17["ref"], list(wmt17["systems"].items())
    out = []
    for metric in (sacrebleu.BLEU(), sacrebleu.CHRF()):
        score = metric.corpus_score(systems[0][1], [ref], n_bootstrap=300)
        out.append((score, repr(score)))
    for kind in ("bs", "ar"):
        sigs, scores = PairedTest(
            systems[:3],
            {"BLEU": sacrebleu.BLEU(references=[ref]), "chrF": sacrebleu.CHRF()},
            [ref],
            test_type=kind,
            n_samples=200 if kind == "bs" else 300,
        )()
        out.append(({k: str(v) for k, v in sigs.items()}, {k: [repr(r) for r in v] for k, v in scores.items()}))
    return out


@pytest.mark.slow
def test_sacrebleu_bootstrap_and_paired_tests(wmt17, monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    before, after, fast = both(sacrebleu_significance, wmt17)
    same(before, after)
    assert fast > 0


# --- rouge-score ---------------------------------------------------------------------------------------


class SplitTokenizer:
    def tokenize(self, text):
        return text.split()


def rouge_run(summaries, stem, split, tokenizer=None):
    preds, refs = summaries
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=stem, split_summaries=split, tokenizer=tokenizer)
    extra = [("", "a b"), ("a b", "!!"), ("x", "y z"), ("Line one.\nLine two", "line two\n\nline one")]
    out = [scorer.score(r, p) for p, r in list(zip(preds, refs)) + extra]
    out.append(scorer.score_multi(refs[:3], preds[0]))
    out.append(rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=stem).score(refs[1], preds[1]))
    agg = scoring.BootstrapAggregator()
    for s in out[:-2]:
        agg.add_scores(s)
    np.random.seed(20261124)
    out.append(agg.aggregate())
    out.append(np.random.random())  # the global RNG is left where rouge-score leaves it
    return out


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_score_on_the_summaries(summaries, stem):
    before, after, fast = both(rouge_run, summaries, stem, False)
    same(before, after)
    assert fast == len(summaries[0]) + 4 + 3 + 1 + 1 + 4  # score per pair, score_multi, aggregate, 4 resamplings


def test_rouge_score_split_summaries_and_a_tokenizer_object(summaries, nltk_punkt):
    small = (summaries[0][:60], summaries[1][:60])
    for split, tok in ((True, None), (False, SplitTokenizer())):
        before, after, fast = both(rouge_run, small, False, split, tok)
        same(before, after)
        assert fast > 60


def one_score_aggregates(summaries):
    """t5-style ROUGE as lm-eval's generation tasks compute it: a ``BootstrapAggregator`` of one score per pair."""
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"])
    np.random.seed(20261202)
    out = []
    for i, (p, r) in enumerate(zip(*summaries)):
        agg = scoring.BootstrapAggregator(n_samples=1 + i % 3 * 500, confidence_interval=0.9 if i % 2 else 0.95)
        agg.add_scores(scorer.score(r, p))
        out.append(agg.aggregate())
        np.random.standard_normal()  # other draws between: the stream goes on where rouge-score leaves it
    out.append(np.random.random())
    return out


def test_rouge_score_aggregates_of_one_score(summaries):
    pairs = (summaries[0][:12], summaries[1][:12])
    before, after, fast = both(one_score_aggregates, pairs)
    same(before, after)
    assert fast == 12 * (1 + 1 + 3)  # score, aggregate, one resampling per type: none falls back


def truthfulqa_gen(summaries):
    """lm-eval 0.4.13's truthfulqa_gen scoring of each document, on stand-in answers (summary sentences):
    ``corpus_bleu`` (tokenize="intl") and a one-score aggregator per reference answer."""
    from lm_eval.tasks.truthfulqa.utils import process_results_gen

    preds, refs = summaries
    np.random.seed(0)
    return [
        process_results_gen({"correct_answers": refs[i : i + 1 + i % 3], "incorrect_answers": refs[i + 5 : i + 7]}, [p])
        for i, p in enumerate(preds)
    ]


def test_lm_eval_truthfulqa_gen_scores(summaries):
    docs = (summaries[0][:4], summaries[1][:20])
    before, after, fast = both(truthfulqa_gen, docs)
    same(before, after)
    answers = sum(1 + i % 3 + 2 for i in range(4))
    assert fast == answers * (1 + 1 + 1 + 3)  # BLEU, score, aggregate and 3 resamplings per answer


# --- scikit-learn ----------------------------------------------------------------------------------------


def topk_run(rng):
    s = rng.standard_normal((3000, 40)).astype(np.float32)
    s[:, 3] = s[:, 9]  # ties
    y = rng.integers(0, 40, 3000)
    w = rng.random(3000)
    labels = np.arange(0, 80, 2)
    out = [top_k_accuracy_score(y, s, k=k) for k in (1, 2, 5, 39)]
    out += [
        top_k_accuracy_score(y, s, k=3, normalize=False),
        top_k_accuracy_score(y, s, k=3, sample_weight=w),
        top_k_accuracy_score(y, s, k=3, normalize=False, sample_weight=w),
        top_k_accuracy_score(2 * y, s.astype(np.float64), k=2, labels=labels),
        top_k_accuracy_score(np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"))[y], s, k=4),
        top_k_accuracy_score(y % 2, s[:, 0], k=1),
        top_k_accuracy_score(y % 2, s[:, 0] > 0, k=1),
        top_k_accuracy_score(y % 2, 1 / (1 + np.exp(-s[:, 0])), k=1),
    ]
    with pytest.warns(Warning, match="perfect score"):
        out.append(top_k_accuracy_score(y, s, k=40))
    return out


def test_top_k_accuracy_score(rng):
    state = rng.bit_generator.state
    before = topk_run(rng)
    rng.bit_generator.state = state
    tm.patch()
    try:
        after = topk_run(rng)
    finally:
        tm.unpatch()
    same(before, after)


# --- torchmetrics ---------------------------------------------------------------------------------------


def perplexity_run(batches, dtype, ignore_index, forward=False):
    m = Perplexity(ignore_index=ignore_index)
    if dtype == torch.float64:
        m.set_dtype(torch.float64)  # float64 states, for the reference (torchmetrics' own are float32)
    out = []
    for logits, target in batches:
        if forward:
            out.append(m(logits.to(dtype), target))
        else:
            m.update(logits.to(dtype), target)
    out.append(m.compute())
    m.reset()
    m.update(batches[0][0].to(dtype), batches[0][1])
    out.append(m.compute())
    out.append(tm_perplexity(batches[0][0].to(dtype), batches[0][1], ignore_index=ignore_index))
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("forward", [False, True])
def test_torchmetrics_perplexity(dtype, forward):
    g = torch.Generator().manual_seed(7)
    batches = []
    for b in range(3):
        logits = torch.randn(2, 33, 500, generator=g) * (1 + 2 * b)
        target = torch.randint(0, 500, (2, 33), generator=g)
        target[b % 2, : 5 + b] = -100
        batches.append((logits, target))
    f64 = perplexity_run([(x.to(dtype).double(), t) for x, t in batches], torch.float64, -100, forward)
    native = perplexity_run(batches, dtype, -100, forward)
    tm.patch()
    try:
        ours = perplexity_run(batches, dtype, -100, forward)
    finally:
        tm.unpatch()
    for o, exact, plain in zip(ours, f64, native):
        assert o.dtype == plain.dtype and o.device == plain.device and o.shape == plain.shape
        # torchmetrics on the same logits upcast to float64, rounded to the dtype it returns
        assert float(o) == pytest.approx(float(exact), rel=max(torch.finfo(o.dtype).eps, 1e-9))
        if dtype in (torch.float32, torch.float64):  # and float32 torchmetrics itself, near it
            assert float(o) == pytest.approx(float(plain), rel=1e-5)


def test_torchmetrics_perplexity_states_remembered_on_the_host_follow_every_change():
    """The patched update remembers the states' values (compute then reads nothing back): an in-place change,
    a new tensor, merge_state, a copy, inference mode and a reset are each seen."""
    import copy
    import math

    from turbometrics.language_model import _token_total

    g = torch.Generator().manual_seed(3)
    batches = [(torch.randn(2, 9, 40, generator=g), torch.randint(0, 40, (2, 9), generator=g)) for _ in range(3)]
    sums = [_token_total(x, t, None, None, None, None) for x, t in batches]

    def value(total: float, count: float) -> float:  # compute's result, as torchmetrics' float32
        return float(torch.tensor(math.exp(total / count), dtype=torch.float64).to(torch.float32))

    (s0, n0), (s1, n1), (s2, n2) = sums
    tm.patch(["torchmetrics"])
    try:
        m = Perplexity()
        m.update(*batches[0])
        assert float(m.compute()) == value(s0, n0)
        m.total_log_probs += 18.0  # in place (the same tensor, a new version)
        m.update(*batches[1])
        assert float(m.compute()) == value(s0 + 18.0 + s1, n0 + n1)
        m.count = torch.tensor(1.0, dtype=torch.float64)  # a new tensor
        m.update(*batches[2])
        assert float(m.compute()) == value(s0 + 18.0 + s1 + s2, 1.0 + n2)
        twin = copy.deepcopy(m)
        other = Perplexity()
        other.update(*batches[0])
        m.merge_state(other)
        m.update(*batches[1])
        assert float(m.compute()) == value(s0 + 18.0 + s1 + s2 + s0 + s1, 1.0 + n2 + n0 + n1)
        twin.update(*batches[0])
        assert float(twin.compute()) == value(s0 + 18.0 + s1 + s2 + s0, 1.0 + n2 + n0)
        m.reset()
        with torch.inference_mode():
            m.update(*batches[2])
        m.update(*batches[0])
        assert float(m.compute()) == value(s2 + s0, n2 + n0)
    finally:
        tm.unpatch()


def test_torchmetrics_perplexity_reset_reads_nothing_back(monkeypatch):
    """The patched reset remembers the fresh states with their defaults' values, read once a metric (again when a
    default is replaced or changed): reset + update + compute reads no state back (on CUDA, no wait for it)."""
    import math

    from turbometrics.language_model import _token_total

    g = torch.Generator().manual_seed(5)
    x, t = torch.randn(2, 9, 40, generator=g), torch.randint(0, 40, (2, 9), generator=g)
    s, n = _token_total(x, t, None, None, None, None)

    def value(total: float, count: float) -> float:  # compute's result, as torchmetrics' float32
        return float(torch.tensor(math.exp(total / count), dtype=torch.float64).to(torch.float32))

    tm.patch(["torchmetrics"])
    try:
        m = Perplexity()
        m.reset()  # (the defaults read, once)
        reads: list = []
        stack = torch.stack
        with monkeypatch.context() as mp:
            mp.setattr(torch, "stack", lambda *a, **k: reads.append(1) or stack(*a, **k))
            for _ in range(3):
                m.reset()
                m.update(x, t)
                assert float(m.compute()) == value(s, n)
        assert not reads
        m._defaults["count"] = torch.tensor(5.0)  # a new default: read at the next reset
        m.reset()
        m.update(x, t)
        assert float(m.compute()) == value(s, n + 5.0)
        m._defaults["count"] += 1.0  # changed in place: read again
        m.reset()
        m.update(x, t)
        assert float(m.compute()) == value(s, n + 6.0)
    finally:
        tm.unpatch()
    assert "reset" not in Perplexity.__dict__  # rebound on the class while patched, the inherited one after


def test_torchmetrics_perplexity_past_float32s_range_is_inf():
    """A perplexity past float32's largest value (a mean NLL of ~100) is inf in torchmetrics' float32, as the
    original gives it (not an overflow error from the fill)."""
    logits = torch.zeros(1, 4, 10)
    logits[..., 0] = 100.0
    target = torch.ones(1, 4, dtype=torch.long)
    tm.patch(["torchmetrics"])
    try:
        m = Perplexity()
        m.update(logits, target)
        for value in (m.compute(), tm_perplexity(logits, target)):
            assert value.dtype == torch.float32 and torch.isinf(value)
    finally:
        tm.unpatch()


def test_torchmetrics_fallbacks_keep_the_original():
    logits = torch.randn(1, 4, 10, requires_grad=True)
    target = torch.randint(0, 10, (1, 4))
    tm.patch()
    try:
        value = tm_perplexity(logits, target)  # differentiable in torchmetrics: the original runs
        value.backward()
        assert logits.grad is not None
        with pytest.raises(ValueError, match="3 dimensions"):
            tm_perplexity(logits[0], target)
    finally:
        tm.unpatch()


# --- the patch itself ------------------------------------------------------------------------------------


def originals():
    from rouge_score import rouge_scorer as rs
    from rouge_score import scoring as sc
    from sacrebleu.metrics import BLEU, CHRF, TER
    from sklearn.metrics import _ranking

    inner = _ranking.top_k_accuracy_score.__wrapped__
    import torchmetrics.text.perplexity as tp

    fp = sys.modules["torchmetrics.functional.text.perplexity"]
    return [
        ("_extract_corpus_statistics" in C.__dict__, "_cache_references" in C.__dict__) for C in (BLEU, CHRF, TER)
    ] + [
        rs.RougeScorer.__dict__["score"],
        sc.BootstrapAggregator.__dict__["_bootstrap_resample"],
        inner,
        inner.__code__,
        tp.Perplexity.update,
        tp.Perplexity.update.__code__,
        tp.Perplexity.compute.__code__,
        tp.Perplexity.__dict__.get("reset"),  # (rebound on the class while patched)
        fp.perplexity,
        fp.perplexity.__code__,
    ] + [  # torchmetrics' text statistics (swapped code objects)
        getattr(sys.modules[f"torchmetrics.functional.text.{m}"], f).__code__
        for m, f in (("bleu", "_bleu_score_update"), ("chrf", "_chrf_score_update"), ("ter", "_ter_update"),
                     ("rouge", "_rouge_score_update"))
    ]  # fmt: skip


def test_unpatch_restores_every_original_object(wmt17):
    tm.unpatch()
    before = originals()
    for _ in range(2):
        tm.patch()
        tm.patch()  # twice: no double patching
        assert tm.is_patched() and tm.is_patched("sacrebleu")
        assert originals() != before
        assert sacrebleu.corpus_bleu(wmt17["systems"]["KIT"][:50], [wmt17["ref"][:50]]).score > 0
        tm.unpatch()
        assert not tm.is_patched()
        after = originals()
        assert all(a is b or a == b for a, b in zip(after, before)), (after, before)


def test_bad_arguments():
    with pytest.raises(ValueError, match="libraries: unknown library 'nltk'"):
        tm.patch("nltk")
    with pytest.raises(ValueError, match="unknown library"):
        tm.is_patched("numpy")
    with pytest.raises(TypeError, match="libraries must be a name or a list of names"):
        tm.patch(3)


def test_chrf_options_ours_do_not_take_fall_back(wmt17):
    # sacrebleu takes orders past ours (5,000 characters, a negative word order): the original scores them
    from sacrebleu.metrics import CHRF

    hyp, ref = wmt17["systems"]["KIT"][:5], wmt17["ref"][:5]
    options = [{"char_order": 1100}, {"word_order": -1}]
    want = [CHRF(**o).corpus_score(hyp, [ref]).score for o in options]
    tm.patch(["sacrebleu"])
    try:
        assert [CHRF(**o).corpus_score(hyp, [ref]).score for o in options] == want
    finally:
        tm.unpatch()


def test_verbose_and_strict(wmt17, caplog, monkeypatch):
    hyp, ref = wmt17["systems"]["KIT"][:20], wmt17["ref"][:20]
    with caplog.at_level(logging.INFO, logger="turbometrics.patch"):
        tm.patch()
        try:
            sacrebleu.corpus_chrf(hyp, [ref])
            want = sacrebleu.corpus_chrf(hyp, [ref], beta=0)  # a beta our chrF does not take: the original runs
            monkeypatch.setenv("TURBOMETRICS_PATCH_STRICT", "1")
            with pytest.raises(PatchFallbackError, match=r"sacrebleu.CHRF statistics: fallback: .*beta"):
                sacrebleu.corpus_chrf(hyp, [ref], beta=0)
            with pytest.raises(TypeError, match="should be a string"):  # the original's own error, strict or not
                sacrebleu.sentence_bleu(3, ["a"])
        finally:
            tm.unpatch()
    messages = [r.getMessage() for r in caplog.records]
    assert "sacrebleu.CHRF statistics: accelerated" in messages
    assert any(m.startswith("sacrebleu.CHRF statistics: fallback: ") and "beta" in m for m in messages)
    tm.unpatch()
    same(sacrebleu.corpus_chrf(hyp, [ref], beta=0), want)


IMPORT_ORDERS = {
    "sacrebleu, names taken before the patch": """
        from sacrebleu import corpus_bleu, BLEU
        bleu = BLEU()
        import turbometrics as tm
        tm.patch()
        corpus_bleu(["a b c d"], [["a b c d"]]); bleu.corpus_score(["a b"], [["a b"]])
        """,
    "libraries imported after the patch": """
        import turbometrics as tm
        tm.patch()
        import sacrebleu
        from rouge_score import rouge_scorer
        from sklearn.metrics import top_k_accuracy_score
        sacrebleu.corpus_bleu(["a b c d"], [["a b c d"]])
        rouge_scorer.RougeScorer(["rouge1"]).score("a b", "a c")
        top_k_accuracy_score([0, 1, 2], [[.5, .3, .2], [.1, .2, .7], [.3, .3, .4]], k=2)
        """,
    "sklearn and torchmetrics objects made before the patch": """
        import torch
        from sklearn.metrics import top_k_accuracy_score, get_scorer
        from torchmetrics.text import Perplexity
        from torchmetrics.functional.text import perplexity
        metric = Perplexity()
        import turbometrics as tm
        tm.patch()
        top_k_accuracy_score([0, 1, 2], [[.5, .3, .2], [.1, .2, .7], [.3, .3, .4]], k=2)
        metric.update(torch.randn(1, 3, 5), torch.tensor([[1, 2, 3]])); metric.compute()
        perplexity(torch.randn(1, 3, 5), torch.tensor([[1, 2, 3]]))
        """,
}


@pytest.mark.parametrize("case", list(IMPORT_ORDERS))
def test_import_orders(case):
    code = textwrap.dedent(IMPORT_ORDERS[case]) + textwrap.dedent("""
        from turbometrics.patch import calls
        c = calls()
        assert c and all(kind == "accelerated" for _, kind in c), c
        print(sum(c.values()))
        """)
    env = {**os.environ, "TURBOMETRICS_PATCH_STRICT": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.split()[-1]) >= 2


def test_the_sacrebleu_command_runs_patched(wmt17, tmp_path):
    ref, hyp = tmp_path / "ref.de", tmp_path / "hyp.de"
    ref.write_text("\n".join(wmt17["ref"][:500]) + "\n", encoding="utf-8")
    hyp.write_text("\n".join(wmt17["systems"]["FBK"][:500]) + "\n", encoding="utf-8")
    args = [str(ref), "-i", str(hyp), "-m", "bleu", "chrf", "ter", "--confidence", "--confidence-n", "100", "-b"]
    plain = subprocess.run([sys.executable, "-m", "sacrebleu", *args], capture_output=True, text=True, timeout=600)
    ours = subprocess.run(
        [sys.executable, "-m", "turbometrics.patch", "--report", "-m", "sacrebleu", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TURBOMETRICS_PATCH_STRICT": "1"},
    )
    assert plain.returncode == ours.returncode == 0, ours.stderr
    assert ours.stdout == plain.stdout and plain.stdout.count("μ") == 3
    assert "sacrebleu.BLEU statistics: 1 accelerated, 0 fallback" in ours.stderr


def test_the_command_line_runs_a_script(tmp_path):
    script = tmp_path / "score.py"
    script.write_text("import sys, sacrebleu\nprint(sys.argv[1:], sacrebleu.corpus_bleu(['a b c d'], [['a b c d']]))\n")
    out = subprocess.run(
        [sys.executable, "-m", "turbometrics.patch", "-v", str(script), "-x", "--y"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("['-x', '--y'] BLEU = 100.00")
    assert "turbometrics.patch: sacrebleu.BLEU statistics: accelerated" in out.stderr
    bad = subprocess.run([sys.executable, "-m", "turbometrics.patch"], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "give a script to run" in bad.stderr


def test_an_unsupported_version_is_left_unpatched(monkeypatch):
    from turbometrics.patch import _table

    tm.unpatch()
    monkeypatch.setattr(_table, "supported", lambda library, version: library.name != "rouge_score")
    with pytest.warns(RuntimeWarning, match="rouge-score 0.1.2 is not a version the patch was written for"):
        tm.patch(["rouge_score", "sacrebleu"])
    try:
        assert not tm.is_patched("rouge_score") and tm.is_patched("sacrebleu")
        assert (
            "score" not in vars(rouge_scorer.RougeScorer)
            or rouge_scorer.RougeScorer.score.__module__ == "rouge_score.rouge_scorer"
        )
    finally:
        tm.unpatch()


def test_a_reference_cache_made_under_the_patch_outlives_it(wmt17):
    import pickle

    ref, hyp = wmt17["ref"][:300], wmt17["systems"]["uedin-nmt"][:300]
    want = sacrebleu.BLEU(references=[ref]).corpus_score(hyp, None)
    tm.patch()
    try:
        bleu, chrf = sacrebleu.BLEU(references=[ref]), sacrebleu.CHRF(references=[ref])
        same(bleu.corpus_score(hyp, None), want)
        copy = pickle.loads(pickle.dumps(bleu))  # sacrebleu's own cache form travels (PairedTest's workers)
        same(copy.corpus_score(hyp, None), want)
    finally:
        tm.unpatch()
    same(bleu.corpus_score(hyp, None), want)  # sacrebleu's unpatched code builds its own cache form on demand
    same(chrf.corpus_score(hyp, None), sacrebleu.CHRF(references=[ref]).corpus_score(hyp, None))
