"""lm_perplexity against the transformers guide's sliding windows, written with exact sums."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import turbometrics as tm
from turbometrics.lm_perplexity import windows

V = 61


class TinyCausalLM(torch.nn.Module):
    """Causal and position-dependent (so windows matter): a running mean of token + position embeddings."""

    def __init__(self, vocab=V, dim=16, max_len=64, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_len, dim)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))[None]
        h = h.cumsum(1) / torch.arange(1, ids.shape[1] + 1)[None, :, None]
        return self.out(torch.tanh(h)) * 3


def guide(model, seq, max_length, stride):
    """The guide's loop with cross_entropy(reduction="sum"): (NLL sum, scored tokens) of one sequence."""
    nll, n, prev_end = 0.0, 0, 0
    for begin in range(0, len(seq), stride):
        end = min(begin + max_length, len(seq))
        trg_len = end - prev_end
        inp = torch.as_tensor(np.asarray(seq[begin:end]))[None]
        labels = inp.clone()
        labels[:, :-trg_len] = -100
        with torch.no_grad():
            logits = model(inp)
            logits = getattr(logits, "logits", logits)
        lab = labels[0, 1:]
        nll += F.cross_entropy(logits[0, :-1].double(), lab, ignore_index=-100, reduction="sum").item()
        n += int((lab != -100).sum())
        prev_end = end
        if end == len(seq):
            break
    return nll, n


def expected(model, seqs, max_length, stride):
    parts = [guide(model, s, max_length, stride) for s in seqs]
    total = sum(p[0] for p in parts) / sum(p[1] for p in parts)
    per = np.array([np.exp(a / b) if b else np.nan for a, b in parts])
    return np.exp(total), per


@pytest.fixture(scope="module")
def ragged():
    rng = np.random.default_rng(5)
    return [rng.integers(0, V, n) for n in (1, 5, 17, 40, 64, 100)]


@pytest.mark.parametrize("max_length,stride", [(16, 16), (16, 8), (16, 5), (16, 1), (7, 3), (64, 32)])
@pytest.mark.parametrize("batch_size", [1, 3, 16])
def test_equals_the_guide(ragged, max_length, stride, batch_size):
    model = TinyCausalLM().eval()
    tok, per = expected(model, ragged, max_length, stride)
    got = tm.lm_perplexity(model, ragged, max_length=max_length, stride=stride, batch_size=batch_size)
    assert got == pytest.approx(tok, rel=1e-6)
    none = tm.lm_perplexity(model, ragged, max_length=max_length, stride=stride, batch_size=batch_size,
                            reduction="none")
    np.testing.assert_allclose(none, per, rtol=1e-6)
    assert np.isnan(none[0])  # one token: nothing to score
    mean = tm.lm_perplexity(model, ragged, max_length=max_length, stride=stride, batch_size=batch_size,
                            reduction="mean")
    assert mean == pytest.approx(np.nanmean(per), rel=1e-6)


def test_every_token_after_the_first_is_scored_once():
    for length in (1, 2, 9, 50):
        for max_length, stride in ((8, 3), (8, 7), (5, 1), (8, 8)):
            scored = [t for w in windows(length, max_length, stride) for t in range(w.score_from, w.end)]
            assert len(scored) == len(set(scored))
            if stride < max_length:
                assert sorted(scored) == list(range(1, length))
            else:  # plain chunks: a chunk's first token has no context
                assert sorted(scored) == [t for t in range(1, length) if t % max_length]


def test_gpt2_from_transformers(ragged):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(vocab_size=V, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                  bos_token_id=0, eos_token_id=0)
    torch.manual_seed(1)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    seqs = ragged[1:]
    for max_length, stride, bs in ((32, 32, 4), (32, 12, 2), (20, 7, 5)):
        tok, per = expected(model, seqs, max_length, stride)
        assert tm.lm_perplexity(model, seqs, max_length=max_length, stride=stride, batch_size=bs) == \
            pytest.approx(tok, rel=1e-6)
        np.testing.assert_allclose(tm.lm_perplexity(model, seqs, max_length=max_length, stride=stride,
                                                    batch_size=bs, reduction="none"), per, rtol=1e-6)


def test_functions_tensors_padding_and_progress(ragged, capsys):
    model = TinyCausalLM().eval()
    tok, _ = expected(model, [ragged[4]], 16, 8)

    def fn(ids):  # a plain function of an int64 ndarray
        assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
        with torch.no_grad():
            return model(torch.from_numpy(ids)).numpy()
    assert tm.lm_perplexity(fn, ragged[4], max_length=16, stride=8) == pytest.approx(tok, rel=1e-6)
    one = torch.as_tensor(ragged[4])
    assert tm.lm_perplexity(lambda ids: model(ids).detach(), one, max_length=16, stride=8) == \
        pytest.approx(tok, rel=1e-6)  # a tensor in, tensors to the function
    # a right-padded (B, T) batch with ignore_index = the pad id, and progress on stderr
    pad = V - 1
    a, b = ragged[2][ragged[2] != pad], ragged[3][ragged[3] != pad]
    batch = np.full((2, max(len(a), len(b))), pad)
    batch[0, :len(a)], batch[1, :len(b)] = a, b
    got = tm.lm_perplexity(model, batch, max_length=16, stride=16, ignore_index=pad, reduction="none",
                           progress=True)
    ref = tm.lm_perplexity(model, [a, b], max_length=16, stride=16, reduction="none")
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert "lm_perplexity" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(model=lambda ids: np.zeros((1, 2, 3))), ValueError, "shape"),
    (dict(token_ids=[np.array([1, 2, V + 5])]), ValueError, "outside the vocabulary"),
    (dict(stride=20, max_length=16), ValueError, "stride"),
    (dict(token_ids=[np.array([1, 2]), np.array([], dtype=np.int64)]), ValueError, "empty"),
    (dict(token_ids=[np.array([1, -3])]), ValueError, "negative"),
    (dict(token_ids=np.array([1.0, 2.0])), TypeError, "integers"),
    (dict(max_length=1), ValueError, "max_length"),
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(reduction="sequence"), ValueError, "reduction"),
    (dict(model="gpt2"), TypeError, "callable"),
])
def test_bad_input(kwargs, exc, match):
    args = dict(model=TinyCausalLM().eval(), token_ids=[np.array([1, 2, 3, 4])], max_length=16)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        tm.lm_perplexity(**args)
