"""TER against sacrebleu 2.6.0: every WMT17 system, every option combination, two references,
per segment, adversarial strings, and the bootstrap / paired tests in sacrebleu's mode."""

import itertools

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import TER

import turbometrics as tm

ADVERSARIAL = [
    "",
    " ",
    "\n",
    "a\u00a0b",
    "A-\nB",
    "&amp; &lt;x&gt; &quot;",
    "Straße STRASSE",
    "İstanbul ǅ",
    "日本語のテキスト、です。",
    "中文，测试！",
    "カタカナ ひらがな",
    "1,000.50 - 3-4",
    "it's John's",
    "( a ) [ b ] { c }",
    "\u3000全角\uff01",
    "x" * 50,
    "😀 👍🏽",
    'a.b,c?d:e;f!g"h(i)j',
    "Nima's, the club's x's",
]

OPTIONS = [
    dict(zip(("normalized", "no_punct", "asian_support", "case_sensitive"), v))
    for v in itertools.product([False, True], repeat=4)
]


def _same(ours, theirs):
    assert (ours.score, ours.num_edits, ours.ref_length) == (theirs.score, theirs.num_edits, theirs.ref_length)


@pytest.mark.slow
def test_every_wmt17_system(wmt17):
    # sacrebleu's TER takes 10 s a system here: every system on its first 300 segments (all 3,004 of
    # three systems are compared per segment below)
    ref = wmt17["ref"][:300]
    for hyps in wmt17["systems"].values():
        ours, m = tm.corpus_ter(hyps[:300], [ref]), TER()
        theirs = m.corpus_score(hyps[:300], [ref])
        _same(ours, theirs)
        assert ours.signature == str(m.get_signature()).replace(sacrebleu.__version__, "2.6.0")
        assert str(ours) == str(theirs)


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(k for k, v in o.items() if v) or "default")
def test_every_option_and_two_references(wmt17, options):
    names = sorted(wmt17["systems"])
    part = slice(2700, 2900)  # holds "Nima's," (sacrebleu normalises references twice: not idempotent there)
    hyps, other = wmt17["systems"][names[0]][part], wmt17["systems"][names[1]][part]
    refs = [wmt17["ref"][part], other]
    for r in (refs[:1], refs):
        m = TER(**options)
        ours = tm.corpus_ter(hyps, r, **options)
        _same(ours, m.corpus_score(hyps, r))
        assert ours.signature == str(m.get_signature()).replace(sacrebleu.__version__, "2.6.0")


@pytest.mark.slow
def test_every_segment_of_three_systems(wmt17):
    for name in sorted(wmt17["systems"])[:3]:
        hyps = wmt17["systems"][name]
        got = tm.segment_ter(hyps, [wmt17["ref"]])
        assert got.tolist() == [sacrebleu.sentence_ter(h, [r]).score for h, r in zip(hyps, wmt17["ref"])]


def test_adversarial_strings():
    texts = list(ADVERSARIAL) + [
        "",
        " ",
        "a a a a a a a a a a a a b",
        "b a a a a a a a a a a a a",
        " ".join(["x", "y"] * 60),
        " ".join(map(str, range(120))),
        "a " * 300,
    ]
    pairs = [(h, r) for h in texts for r in texts]
    for options in (OPTIONS[0], OPTIONS[-1], {"normalized": True, "asian_support": True}):
        hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
        assert tm.segment_ter(hyps, [refs], **options).tolist() == [
            TER(**options).sentence_score(h, [r]).score for h, r in pairs
        ]
        _same(tm.corpus_ter(hyps, [refs], **options), TER(**options).corpus_score(hyps, [refs]))


def test_lengths_far_apart_and_the_candidate_limit():
    rng = np.random.default_rng(0)
    for nh, nr in ((3, 200), (200, 3), (120, 120), (1, 1), (0, 5), (5, 0)):
        h = " ".join(f"w{x}" for x in rng.integers(0, 6, nh))
        r = " ".join(f"w{x}" for x in rng.integers(0, 6, nr))
        _same(tm.sentence_ter(h, [r]), TER().sentence_score(h, [r]))


def test_bootstrap_and_paired_tests_in_sacrebleus_mode(wmt17):
    from sacrebleu.significance import PairedTest

    names = sorted(wmt17["systems"])
    base, system = wmt17["systems"][names[0]][:800], wmt17["systems"][names[1]][:800]
    refs = [wmt17["ref"][:800]]
    acc = tm.metrics.TER().update(base, refs)
    ci = tm.bootstrap_ci(acc, n_resamples=300, mode="sacrebleu")
    theirs = TER().corpus_score(base, refs, n_bootstrap=300)
    assert (ci.mean, ci.ci) == (float(theirs._mean), float(theirs._ci))
    _, res = PairedTest([("base", base), ("sys", system)], {"ter": TER()}, refs, test_type="bs", n_samples=300)()
    r = list(res.values())[1][1]  # {"System": names, "ter": [baseline result, system result]}
    ours = tm.paired_test(acc, tm.metrics.TER().update(system, refs), n_resamples=300, mode="sacrebleu")
    assert (ours.system, ours.p_value) == (r.score, r.p_value)
    # the default mode: an interval around the score, chunking does not matter
    chunked = tm.metrics.TER().update(base[:300], [refs[0][:300]]) + tm.metrics.TER().update(
        base[300:], [refs[0][300:]]
    )
    assert chunked.compute() == acc.compute()
    d = tm.bootstrap_ci(acc, n_resamples=200)
    assert d.low <= d.score <= d.high


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tm.corpus_ter("a b", [["a b"]]), TypeError, "hypotheses must be a list"),
        (lambda: tm.corpus_ter(["a", "b"], [["a"]]), ValueError, "has 1 segments but there are 2"),
        (lambda: tm.corpus_ter(["a"], [[None]]), ValueError, "segment 0 has no reference"),
        (lambda: tm.sentence_ter("a", []), ValueError, "references is empty"),
        (lambda: tm.sentence_ter(["a"], ["a"]), TypeError, "hypothesis must be a str"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.slow
def test_the_command_prints_what_sacrebleu_prints(wmt17, tmp_path):
    import subprocess
    import sys

    ref, hyp = tmp_path / "ref.de", tmp_path / "hyp.de"
    name = sorted(wmt17["systems"])[0]
    ref.write_text("\n".join(wmt17["ref"][:500]) + "\n", encoding="utf-8")
    hyp.write_text("\n".join(wmt17["systems"][name][:500]) + "\n", encoding="utf-8")
    for flags in ([], ["--ter-normalized", "-w", "3"]):
        ours = subprocess.run(
            [sys.executable, "-m", "turbometrics", "ter", str(ref), "-i", str(hyp), *flags],
            capture_output=True,
            text=True,
        )
        theirs = subprocess.run(
            [sys.executable, "-m", "sacrebleu", str(ref), "-i", str(hyp), "-m", "ter", "-f", "text", *flags],
            capture_output=True,
            text=True,
        )
        assert ours.returncode == 0 and ours.stdout == theirs.stdout, (ours.stderr, theirs.stdout)
        ours_json = subprocess.run(
            [sys.executable, "-m", "turbometrics", "ter", str(ref), "-i", str(hyp), "--json", *flags],
            capture_output=True,
            text=True,
        )
        theirs_json = subprocess.run(
            [sys.executable, "-m", "sacrebleu", str(ref), "-i", str(hyp), "-m", "ter", *flags],
            capture_output=True,
            text=True,
        )
        assert ours_json.stdout == theirs_json.stdout
