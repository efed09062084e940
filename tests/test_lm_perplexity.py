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
    none = tm.lm_perplexity(
        model, ragged, max_length=max_length, stride=stride, batch_size=batch_size, reduction="none"
    )
    np.testing.assert_allclose(none, per, rtol=1e-6)
    assert np.isnan(none[0])  # one token: nothing to score
    mean = tm.lm_perplexity(
        model, ragged, max_length=max_length, stride=stride, batch_size=batch_size, reduction="mean"
    )
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


@pytest.mark.slow
def test_gpt2_from_transformers(ragged):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(
        vocab_size=V, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    torch.manual_seed(1)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    seqs = ragged[1:]
    for max_length, stride, bs in ((32, 32, 4), (32, 12, 2), (20, 7, 5)):
        tok, per = expected(model, seqs, max_length, stride)
        assert tm.lm_perplexity(model, seqs, max_length=max_length, stride=stride, batch_size=bs) == pytest.approx(
            tok, rel=1e-6
        )
        np.testing.assert_allclose(
            tm.lm_perplexity(model, seqs, max_length=max_length, stride=stride, batch_size=bs, reduction="none"),
            per,
            rtol=1e-6,
        )


def test_functions_tensors_padding_and_progress(ragged, capsys):
    model = TinyCausalLM().eval()
    tok, _ = expected(model, [ragged[4]], 16, 8)

    def fn(ids):  # a plain function of an int64 ndarray
        assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
        with torch.no_grad():
            return model(torch.from_numpy(ids)).numpy()

    assert tm.lm_perplexity(fn, ragged[4], max_length=16, stride=8) == pytest.approx(tok, rel=1e-6)
    one = torch.as_tensor(ragged[4])
    assert tm.lm_perplexity(lambda ids: model(ids).detach(), one, max_length=16, stride=8) == pytest.approx(
        tok, rel=1e-6
    )  # a tensor in, tensors to the function
    # a right-padded (B, T) batch with ignore_index = the pad id, and progress on stderr
    pad = V - 1
    a, b = ragged[2][ragged[2] != pad], ragged[3][ragged[3] != pad]
    batch = np.full((2, max(len(a), len(b))), pad)
    batch[0, : len(a)], batch[1, : len(b)] = a, b
    got = tm.lm_perplexity(model, batch, max_length=16, stride=16, ignore_index=pad, reduction="none", progress=True)
    ref = tm.lm_perplexity(model, [a, b], max_length=16, stride=16, reduction="none")
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert "lm_perplexity" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
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
    ],
)
def test_bad_input(kwargs, exc, match):
    args = dict(model=TinyCausalLM().eval(), token_ids=[np.array([1, 2, 3, 4])], max_length=16)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        tm.lm_perplexity(**args)


# --- through the head's input: the logits are never made --------------------------------------------------------


def tiny_hf(kind, tie=False, dtype=torch.float32, **extra):
    """A two-layer Hugging Face causal LM built from a config (no download), random weights."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if kind == "gpt2":
        cfg = transformers.GPT2Config(
            vocab_size=V,
            n_positions=64,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=0,
            eos_token_id=0,
            tie_word_embeddings=tie,
        )
        return transformers.GPT2LMHeadModel(cfg).to(dtype).eval()
    common = dict(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
        tie_word_embeddings=tie,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
        **extra,
    )
    config, model = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "gemma2": ("Gemma2Config", "Gemma2ForCausalLM"),
        "cohere": ("CohereConfig", "CohereForCausalLM"),
        "granite": ("GraniteConfig", "GraniteForCausalLM"),
    }[kind]
    return getattr(transformers, model)(getattr(transformers, config)(**common)).to(dtype).eval()


def head_calls(model):
    """How many times the model's LM head module runs (the fused path never calls it but for the probe)."""
    calls = []
    model.get_output_embeddings().register_forward_hook(lambda *_: calls.append(1))
    return calls


HF_MODELS = [
    ("gpt2", True, {}),
    ("llama", False, {}),
    ("llama", True, {}),
    ("gemma2", False, dict(final_logit_softcapping=0.5)),  # small cap: the tanh matters on tiny logits
    ("cohere", True, dict(logit_scale=0.3)),
    ("granite", False, dict(logits_scaling=4.0)),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind,tie,extra", HF_MODELS)
def test_huggingface_models_through_the_head_equal_the_logits_path(ragged, kind, tie, extra):
    model = tiny_hf(kind, tie, **extra)
    assert (model.get_output_embeddings().weight is model.get_input_embeddings().weight) == tie
    calls = head_calls(model)
    seqs = ragged[1:]
    for max_length, stride, bs in ((32, 32, 4), (32, 12, 2), (20, 7, 5)):
        fused = tm.lm_perplexity(model, seqs, max_length=max_length, stride=stride, batch_size=bs, reduction="none")
        assert len(calls) == 1  # the probe only: every batch went through the hidden states
        calls.clear()
        logits = tm.lm_perplexity(
            model, seqs, max_length=max_length, stride=stride, batch_size=bs, reduction="none", fuse_head=False
        )
        assert len(calls) > 1
        calls.clear()
        np.testing.assert_allclose(fused, logits, rtol=1e-6)
        tok, per = expected(model, seqs, max_length, stride)
        np.testing.assert_allclose(fused, per, rtol=1e-6)
        assert tm.lm_perplexity(
            model, seqs, max_length=max_length, stride=stride, batch_size=bs, fuse_head=True
        ) == pytest.approx(tok, rel=1e-6)
        calls.clear()


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_models_multiply_in_their_own_dtype(ragged, dtype):
    model = tiny_hf("gemma2", dtype=dtype, final_logit_softcapping=0.5)
    kw = dict(max_length=32, stride=12, batch_size=3, reduction="none")
    np.testing.assert_allclose(
        tm.lm_perplexity(model, ragged, **kw), tm.lm_perplexity(model, ragged, fuse_head=False, **kw), rtol=1e-6
    )


def test_labels_padding_and_ignore_index_through_the_head(ragged):
    model = tiny_hf("llama")
    labels = [np.where(np.arange(len(s)) < len(s) // 2, -100, s) for s in ragged]  # score the second halves
    kw = dict(max_length=16, stride=6, batch_size=4, labels=labels, reduction="none")
    np.testing.assert_allclose(
        tm.lm_perplexity(model, ragged, **kw), tm.lm_perplexity(model, ragged, fuse_head=False, **kw), rtol=1e-6
    )
    pad = V - 1
    kw = dict(max_length=16, stride=16, ignore_index=pad, reduction="none")
    np.testing.assert_allclose(
        tm.lm_perplexity(model, ragged, **kw), tm.lm_perplexity(model, ragged, fuse_head=False, **kw), rtol=1e-6
    )


def test_an_unknown_logit_map_falls_back_or_fails(ragged):
    transformers = pytest.importorskip("transformers")

    class Doubled(transformers.LlamaForCausalLM):  # a model that does something else to its logits
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2
            return out

    torch.manual_seed(0)
    model = Doubled(tiny_hf("llama").config).eval()
    tok, _ = expected(model, ragged[2:], 16, 8)
    with pytest.warns(UserWarning, match="differ from its head"):
        assert tm.lm_perplexity(model, ragged[2:], max_length=16, stride=8) == pytest.approx(tok, rel=1e-6)
    with pytest.raises(ValueError, match="does not reproduce"):
        tm.lm_perplexity(model, ragged[2:], max_length=16, stride=8, fuse_head=True)
    dropout = tiny_hf("gpt2").train()  # dropout on: no two forward passes agree
    with pytest.raises(ValueError, match=r"call model\.eval\(\)"):
        tm.lm_perplexity(dropout, ragged[2:], max_length=16, stride=8, fuse_head=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_maps_within_a_bfloat16_step_of_the_logits_fall_back(ragged, dtype):
    """Maps the split does not reproduce exactly, though close: the check is logit by logit, not against the
    largest logit (bfloat16's unit of last place is 0.8% of a value)."""

    def made(kind):  # a Llama that does one thing more than the split reproduces
        model = tiny_hf("llama")
        with torch.no_grad():
            model.lm_head.weight.mul_(30)  # logits up to ~6: a cap of 30 moves them by at most ~1%
        head = model.lm_head
        if kind == "hidden scaled":  # MiniCPM3: the hidden states divided by logits_scaling before the head,
            model.config.logits_scaling = 10.0  # which the split reads as Granite's quotient of the logits
            head.register_forward_pre_hook(lambda mod, args: (args[0] / 10.0,))
        else:  # an unnamed soft cap (RecurrentGemma's before its name was known): tanh(x / 30) * 30
            head.register_forward_hook(lambda mod, args, out: torch.tanh(out / 30.0) * 30.0)
        return model.to(dtype)

    for kind in ("hidden scaled", "soft cap"):
        model = made(kind)
        with pytest.warns(UserWarning, match="differ from its head"):
            got = tm.lm_perplexity(model, ragged[2:], max_length=16, stride=8)
        assert got == tm.lm_perplexity(model, ragged[2:], max_length=16, stride=8, fuse_head=False), kind


def test_a_float32_residual_stream_and_float32_rounded_logits(ragged):
    """Mamba in bfloat16 keeps its residual stream in float32 and casts before the head (the split casts
    too); in float64 it rounds its logits to float32 (the split falls back: it would not)."""
    model = tiny_hf("llama", dtype=torch.bfloat16)
    model.model.register_forward_hook(
        lambda mod, args, out: setattr(out, "last_hidden_state", out.last_hidden_state.float()) or out
    )
    model.lm_head.register_forward_pre_hook(lambda mod, args: (args[0].to(mod.weight.dtype),))
    kw = dict(max_length=16, stride=8, reduction="none")
    np.testing.assert_allclose(
        tm.lm_perplexity(model, ragged[2:], fuse_head=True, **kw),
        tm.lm_perplexity(model, ragged[2:], fuse_head=False, **kw),
        rtol=1e-6,
    )
    model = tiny_hf("llama", dtype=torch.float64)
    model.lm_head.register_forward_hook(lambda mod, args, out: out.float())
    with pytest.raises(ValueError, match="rounds its logits to torch.float32"):
        tm.lm_perplexity(model, ragged[2:], fuse_head=True, **kw)


def test_a_body_head_pair(ragged):
    model = TinyCausalLM().eval()

    def body(ids):  # everything before model.out, then the * 3 folded into the head's weight
        ids = torch.as_tensor(ids)
        h = model.tok(ids) + model.pos(torch.arange(ids.shape[1]))[None]
        return torch.tanh(h.cumsum(1) / torch.arange(1, ids.shape[1] + 1)[None, :, None])

    w, b = (model.out.weight * 3).detach(), (model.out.bias * 3).detach()
    tok, per = expected(model, ragged, 16, 5)
    for head in ((w, b), torch.nn.Linear(16, V).requires_grad_(False)):
        if isinstance(head, torch.nn.Linear):
            head.weight.copy_(w)
            head.bias.copy_(b)
        got = tm.lm_perplexity((body, head), ragged, max_length=16, stride=5, reduction="none")
        np.testing.assert_allclose(got, per, rtol=1e-6)
    # NumPy throughout: a function of int64 ids returning float64 hidden states, and a float64 weight
    np_body = lambda ids: body(torch.from_numpy(ids)).double().detach().numpy()  # noqa: E731
    got = tm.lm_perplexity((np_body, (w.double().numpy(), b.double().numpy())), ragged, max_length=16, stride=5)
    assert got == pytest.approx(tok, rel=1e-6)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(fuse_head=True), ValueError, "cannot be split"),
        (dict(fuse_head="yes"), TypeError, "fuse_head"),
        (dict(model=(lambda ids: ids, torch.zeros(V, 4)), fuse_head=False), ValueError, "fuse_head=False"),
        (dict(model=(lambda ids: ids, torch.zeros(V, 4), None)), TypeError, "pair"),
        (dict(model=(lambda ids: ids, "head")), TypeError, "head"),
        (dict(model=("body", torch.zeros(V, 4))), TypeError, "body"),
        (dict(model=(lambda ids: torch.zeros(ids.shape), torch.zeros(V, 4))), ValueError, "hidden states"),
        (dict(model=(lambda ids: torch.zeros(*ids.shape, 3), torch.zeros(V, 4))), ValueError, "weight"),
    ],
)
def test_bad_split_input(kwargs, exc, match):
    args = dict(model=TinyCausalLM().eval(), token_ids=[np.array([1, 2, 3, 4])], max_length=16)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        tm.lm_perplexity(**args)
