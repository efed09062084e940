"""The ecosystem's conventions: python -m, scikit-learn's cross_validate keys, clear errors."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import turbometrics as tm


def test_python_dash_m_is_the_command(tmp_path):
    ref, hyp = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    ref.write_text("the cat sat on the mat\n")
    hyp.write_text("the cat sat on a mat\n")
    runs = [
        subprocess.run(cmd + ["bleu", str(ref), "-i", str(hyp)], capture_output=True, text=True)
        for cmd in ([sys.executable, "-m", "turbometrics"], [sys.executable, "-m", "turbometrics.cli"])
    ]
    assert runs[0].returncode == 0 and runs[0].stdout == runs[1].stdout and runs[0].stdout.startswith("BLEU|")


def test_cross_validate_has_scikit_learns_keys():
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    res = tm.cross_validate(
        lambda Xtr, ytr, Xte: np.eye(2)[(Xte[:, 0] % 2).astype(int)],
        X,
        y,
        cv=4,
        metrics={"acc": lambda s, t: tm.topk_accuracy(s, t, k=1)},
    )
    assert list(res) == ["fit_time", "score_time", "test_acc"]
    df = pd.DataFrame(res)
    assert list(df.columns) == ["fit_time", "score_time", "test_acc"] and len(df) == 4
    assert res["test_acc"] is res["acc"] and res.mean["acc"] == 1.0 and "mean" in str(res)


@pytest.mark.parametrize("bad", [[0.5, 1.5], [0.5, -0.1], [0.5, float("nan")]])
def test_probabilities_outside_the_unit_interval_are_an_error(bad):
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        tm.perplexity_from_probs(bad)
    with pytest.raises(ValueError, match="probs"):
        tm.perplexity_from_probs(np.array([bad, [0.5, 0.5]]), [1, 0])
    # positions not counted are not read
    assert tm.perplexity_from_probs(bad, mask=[True, False]) == 2.0


def test_gathered_log_probabilities():
    lp = np.log(np.array([[0.5, 0.25], [0.125, 0.5]]))
    mask = np.array([[True, True], [False, True]])
    assert tm.perplexity_from_log_probs(lp, mask=mask) == tm.perplexity_from_probs(np.exp(lp), mask=mask)
    assert tm.perplexity_from_log_probs(lp[0]) == pytest.approx(2**1.5)
    with pytest.raises(ValueError, match="ignore_index needs targets"):
        tm.perplexity_from_log_probs(lp, ignore_index=0)


def test_the_array_commands_say_when_a_file_is_not_npy(tmp_path):
    txt, obj, t = tmp_path / "x.txt", tmp_path / "obj.npy", tmp_path / "t.npy"
    txt.write_text("1 2 3\n")
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(t, np.array([0]))
    for path, msg in ((txt, "is not a .npy file"), (obj, "cannot read it as a numeric .npy array")):
        out = subprocess.run(
            [sys.executable, "-m", "turbometrics", "perplexity", str(path), str(t)], capture_output=True, text=True
        )
        assert out.returncode == 2 and msg in out.stderr and "allow_pickle" not in out.stderr, out.stderr


class _Whitespace:
    """A rouge-score style tokenizer object: case kept, punctuation attached."""

    def tokenize(self, text):
        return text.split()


def _multiline(texts):
    return [t.replace(". ", ".\n") for t in texts]


@pytest.mark.parametrize("tokenizer", [_Whitespace(), lambda t: t.lower().split(",")], ids=["object", "callable"])
def test_rouge_takes_a_tokenizer_as_rouge_score_does(summaries, tokenizer):
    from rouge_score import rouge_scorer

    class Wrapped:  # rouge-score wants an object with .tokenize
        def tokenize(self, text):
            return tokenizer(text) if callable(tokenizer) else tokenizer.tokenize(text)

    preds, refs = _multiline(summaries[0][:300]), _multiline(summaries[1][:300])
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    ours = tm.rouge(preds, refs, types, tokenizer=tokenizer)
    scorer = rouge_scorer.RougeScorer(types, tokenizer=Wrapped())
    for i, (p, r) in enumerate(zip(preds, refs)):
        theirs = scorer.score(r, p)
        for t in types:
            assert tuple(float(getattr(ours[t], f)[i]) for f in ("precision", "recall", "fmeasure")) == tuple(
                theirs[t]
            ), (i, t)
    acc = tm.metrics.ROUGE(types, tokenizer=tokenizer).update(preds[:100], refs[:100]).update(preds[100:], refs[100:])
    assert all(np.array_equal(acc.compute()[t].fmeasure, ours[t].fmeasure) for t in types)


def test_rouge_takes_pretokenized_input():
    got = tm.rouge(
        [["The", "cat", "."], ["a"]],
        [["The", "cat", "sat"], [["b"], ["a", "b"]]],
        ["rouge1", "rougeL"],
        tokenizer="pretokenized",
    )
    ws = tm.rouge(["The cat .", "a"], ["The cat sat", ["b", "a b"]], ["rouge1", "rougeL"], tokenizer=str.split)
    for t in ("rouge1", "rougeL"):
        assert np.array_equal(got[t].fmeasure, ws[t].fmeasure)
    assert got["rouge1"].precision[0] == pytest.approx(2 / 3)
    with pytest.raises(TypeError, match="tokenizer must be"):
        tm.rouge(["a"], ["a"], tokenizer=3)
    with pytest.raises(TypeError, match=r"predictions\[0\]"):
        tm.rouge([[1, 2]], [["a"]], tokenizer="pretokenized")


def test_lm_perplexity_scores_only_the_labelled_positions():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((11, 11))
    model = lambda ids: W[ids]  # position t's logits depend on token t only: causal  # noqa: E731
    seqs = [rng.integers(0, 11, n) for n in (7, 12, 5)]
    labels = [np.full(len(s), -100) for s in seqs]
    for s, lab in zip(seqs, labels):  # score the last two tokens (the "answer") only
        lab[-2:] = s[-2:]
    logp = W - np.log(np.exp(W).sum(1, keepdims=True))
    nll = [[-logp[s[j - 1], s[j]] for j in (len(s) - 2, len(s) - 1)] for s in seqs]
    got = tm.lm_perplexity(model, seqs, max_length=4, stride=2, labels=labels, reduction="none")
    np.testing.assert_allclose(got, np.exp([np.mean(x) for x in nll]), rtol=1e-6)
    total = tm.lm_perplexity(model, seqs, max_length=4, stride=2, labels=labels)
    assert total == pytest.approx(np.exp(np.mean(sum(nll, []))), rel=1e-6)
    # labels other than the tokens are scored as given (Hugging Face's labels)
    other = [np.where(lab == -100, -100, (lab + 1) % 11) for lab in labels]
    want = np.mean([-logp[s[j - 1], (s[j] + 1) % 11] for s in seqs for j in (len(s) - 2, len(s) - 1)])
    assert tm.lm_perplexity(model, seqs, max_length=4, stride=2, labels=other) == pytest.approx(np.exp(want), rel=1e-6)
    with pytest.raises(ValueError, match="labels must match token_ids"):
        tm.lm_perplexity(model, seqs, labels=labels[:2])
    with pytest.raises(ValueError, match=r"labels\[0\] holds id 11, outside the vocabulary"):
        tm.lm_perplexity(model, seqs, labels=[np.where(lab >= 0, 11, lab) for lab in labels], vocab_size=11)
