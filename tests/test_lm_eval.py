"""lm-evaluation-harness 0.4.13 through the fused LM head: ``tm.patch(["lm_eval"])`` and ``turbometrics.lm_eval.HFLM``
give every request's ``(loglikelihood, is_greedy)`` of the original run (its float64 log-softmax: 1e-9 relative,
is_greedy identical, exact ties included; its default log-softmax in the logits' dtype: 1e-5), and the same task
metrics from ``simple_evaluate`` on local multiple-choice and rolling-perplexity tasks. Small Llama- and
GPT-2-shaped models built from configs (random weights) and a tokenizer built here: nothing is downloaded."""

import json
import logging
import re

import numpy as np
import pytest
import torch

pytest.importorskip("accelerate")
import lm_eval  # noqa: E402
import lm_eval.models.huggingface as hf  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

import turbometrics as tm  # noqa: E402
import turbometrics.lm_eval as tm_lm_eval  # noqa: E402
from turbometrics.patch import PatchFallbackError, calls  # noqa: E402

V = 384  # vocabulary: "w0" .. "w383", one token a word
MAX_LEN = 48


@pytest.fixture(scope="module")
def tokenizer():
    vocab = {f"w{i}": i for i in range(V)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="w1"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="w1", eos_token="w0", pad_token="w0")


def build(arch: str, dtype: torch.dtype):
    torch.manual_seed(7)
    if arch == "gpt2":  # tied head and embeddings, a bias-free head
        model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_embd=64, n_layer=2, n_head=4, n_positions=128))
    else:
        cfg = LlamaConfig(
            vocab_size=V,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
        model = LlamaForCausalLM(cfg)
    return model.to(dtype).eval()


def next_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1]


def with_tie(model, ids):
    """A head row copied so that the argmax after ``ids`` is an exact tie: (first, second) of the tied pair.
    The copied token is not in ``ids`` (GPT-2's embeddings are its head)."""
    top = int(next_logits(model, ids).argmax())
    other = next(t for t in range(V - 1, 0, -1) if t != top and t not in ids)
    with torch.no_grad():
        w = model.get_output_embeddings().weight
        w[other] = w[top]
    logits = next_logits(model, ids)
    assert logits[top] == logits[other] == logits.max()
    return min(top, other), max(top, other)


def requests_for(model, rng):
    """Context/continuation pairs of every kind: random, greedy (each token the argmax), one-token
    continuations sharing a context (the harness's logits cache), exact ties both ways, and contexts
    longer than the model's window (truncated from the left)."""
    reqs = []

    def add(ctx, cont):
        ctx, cont = [int(t) for t in ctx], [int(t) for t in cont]
        reqs.append(((" ".join(f"w{t}" for t in ctx), " ".join(f"w{t}" for t in cont)), ctx, cont))

    tie_ctx = list(rng.integers(2, V // 2, 9))
    first, second = with_tie(model, tie_ctx)
    add(tie_ctx, [first])
    add(tie_ctx, [second])
    for _ in range(14):
        ctx = list(rng.integers(1, V, rng.integers(1, 20)))
        add(ctx, rng.integers(1, V, rng.integers(1, 6)))
        greedy = []
        for _ in range(int(rng.integers(1, 4))):
            greedy.append(int(next_logits(model, ctx + greedy).argmax()))
        add(ctx, greedy)
        for t in rng.choice(V, 3, replace=False):  # one-token choices of one context
            add(ctx, [t])
    add(list(rng.integers(1, V, MAX_LEN + 10)), rng.integers(1, V, 3))  # truncated from the left
    return reqs


def harness(model, tokenizer, **kw):
    kw.setdefault("batch_size", 4)
    return hf.HFLM(pretrained=model, tokenizer=tokenizer, max_length=MAX_LEN, device="cpu", **kw)


def accelerated(label="lm_eval.HFLM._loglikelihood_tokens"):
    return calls().get((label, "accelerated"), 0)


def assert_same(ours, theirs, rtol):
    assert len(ours) == len(theirs)
    a = np.array([ll for ll, _ in ours])
    b = np.array([ll for ll, _ in theirs])
    np.testing.assert_allclose(a, b, rtol=rtol, atol=0)
    assert [g for _, g in ours] == [g for _, g in theirs]


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("TURBOMETRICS_PATCH_STRICT", "1")
    tm.unpatch()
    yield
    tm.unpatch()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize(
    "dtype, mixed",
    [(torch.float32, None), (torch.float64, None), (torch.bfloat16, None), (torch.float32, "bfloat16")],
    ids=["float32", "float64", "bfloat16", "float32-autocast-bfloat16"],
)
def test_every_request_as_the_original(arch, dtype, mixed, tokenizer, strict):
    model = build(arch, dtype)
    reqs = requests_for(model, np.random.default_rng(3))
    lm = harness(model, tokenizer, softmax_dtype="float64", mixed_precision_dtype=mixed)
    exact = lm._loglikelihood_tokens(reqs, disable_tqdm=True)
    default = harness(model, tokenizer, mixed_precision_dtype=mixed)._loglikelihood_tokens(reqs, disable_tqdm=True)
    greedy = [g for _, g in exact]
    assert sum(greedy) >= 12 and not all(greedy)
    assert exact[0][1] and not exact[1][1]  # the tie: the first of the two tokens is the greedy one

    # logits below float64 are rounded as the matrix product's shape has them: the original's own answers move
    # (float32: by ~1e-8) between batch sizes (its logits for 4 rows are not its logits for 1); ours are within
    # that spread
    spread = 0.0
    if dtype != torch.float64:
        lls = lambda res: np.array([ll for ll, _ in res])  # noqa: E731
        for size in (1, 8):
            other = harness(model, tokenizer, softmax_dtype="float64", batch_size=size, mixed_precision_dtype=mixed)
            spread = max(spread, np.max(np.abs(lls(other._loglikelihood_tokens(reqs, True)) / lls(exact) - 1)))

    tm.patch(["lm_eval"])
    start = accelerated()
    ours = lm._loglikelihood_tokens(reqs, disable_tqdm=True)
    assert accelerated() > start
    assert_same(ours, exact, max(spread, 1e-9))
    if dtype != torch.bfloat16 and mixed is None:  # the default log-softmax in bfloat16 is ~1e-2 off, its ties its own
        assert_same(ours, default, 1e-5)
    # softmax_dtype does not change ours: the log-probabilities are float64 throughout
    assert harness(model, tokenizer, mixed_precision_dtype=mixed)._loglikelihood_tokens(reqs, True) == ours


def write_tasks(folder, rng):
    """A multiple-choice task and a rolling-perplexity task in local YAML + JSON lines files."""
    words = lambda n: " ".join(f"w{t}" for t in rng.integers(2, V, n))  # noqa: E731
    mc = [{"q": words(int(rng.integers(2, 12))), "choices": [words(int(rng.integers(1, 3))) for _ in range(4)],
           "label": int(rng.integers(4))} for _ in range(12)]  # fmt: skip
    mc += [{"q": words(5), "choices": [f"w{t}" for t in (3, 4, 5)], "label": 1}]  # one-token choices: the cache
    docs = [{"text": words(int(n))} for n in (5, 30, 120, 7)]  # 120 words: several windows of MAX_LEN
    (folder / "mc.jsonl").write_text("".join(json.dumps(d) + "\n" for d in mc))
    (folder / "ppl.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    common = "dataset_path: json\ntest_split: test\nmetadata:\n  version: 1.0\n"
    (folder / "tm_mc.yaml").write_text(
        f"task: tm_mc\n{common}dataset_kwargs:\n  data_files:\n    test: {folder / 'mc.jsonl'}\n"
        "output_type: multiple_choice\ndoc_to_text: '{{q}}'\ndoc_to_target: label\ndoc_to_choice: '{{choices}}'\n"
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
    )
    (folder / "tm_ppl.yaml").write_text(
        f"task: tm_ppl\n{common}dataset_kwargs:\n  data_files:\n    test: {folder / 'ppl.jsonl'}\n"
        "output_type: loglikelihood_rolling\ndoc_to_text: ''\ndoc_to_target: '{{text}}'\n"
        "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n  - metric: bits_per_byte\n"
    )
    return TaskManager(include_path=str(folder), include_defaults=False)


def evaluate(model_name, model_args, tasks):
    out = lm_eval.simple_evaluate(
        model=model_name, model_args=model_args, tasks=["tm_mc", "tm_ppl"], task_manager=tasks, batch_size=4,
        bootstrap_iters=0, log_samples=True,
    )  # fmt: skip
    metrics = {t: {k: v for k, v in r.items() if k != "alias"} for t, r in out["results"].items()}
    responses = {t: [s["resps"] for s in sorted(out["samples"][t], key=lambda s: s["doc_id"])] for t in out["samples"]}
    return metrics, responses


def same_metrics(ours, theirs):
    assert ours.keys() == theirs.keys()
    for task in ours:
        assert ours[task].keys() == theirs[task].keys()
        for k, v in ours[task].items():
            if isinstance(v, float):
                assert v == pytest.approx(theirs[task][k], rel=1e-9, abs=0), (task, k)
            else:
                assert v == theirs[task][k], (task, k)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_simple_evaluate_on_local_tasks(arch, tokenizer, tmp_path, strict, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    tasks = write_tasks(tmp_path, np.random.default_rng(5))
    model = build(arch, torch.float64)  # float64 logits: no shape-dependent rounding of the head's product
    args = {"pretrained": model, "tokenizer": tokenizer, "max_length": MAX_LEN, "softmax_dtype": "float64"}
    metrics, responses = evaluate("hf", args, tasks)

    tm.patch(["lm_eval"])
    start = accelerated()
    patched = evaluate("hf", args, tasks)
    assert accelerated() > start
    tm.unpatch()
    start = accelerated("turbometrics.lm_eval.HFLM._loglikelihood_tokens")
    by_class = evaluate(tm_lm_eval.MODEL_NAME, args, tasks)
    assert accelerated("turbometrics.lm_eval.HFLM._loglikelihood_tokens") > start
    for ours_metrics, ours_responses in (patched, by_class):
        same_metrics(ours_metrics, metrics)
        for ours, theirs in zip(ours_responses["tm_mc"], responses["tm_mc"], strict=True):
            assert_same([r[0] for r in ours], [r[0] for r in theirs], 1e-9)
        got = np.array([r[0] for r in ours_responses["tm_ppl"]], dtype=float)
        np.testing.assert_allclose(got, np.array([r[0] for r in responses["tm_ppl"]], dtype=float), rtol=1e-9)


def test_the_class_is_registered():
    from lm_eval.api.registry import get_model

    assert get_model("hf-turbometrics") is tm_lm_eval.HFLM
    assert issubclass(tm_lm_eval.HFLM, hf.HFLM)


class ScaledGPT2(GPT2LMHeadModel):
    """A model that changes its logits in a way the split does not know."""

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = out.logits * 2
        return out


class OwnCall(hf.HFLM):
    def _model_call(self, inps, attn_mask=None, labels=None):
        return super()._model_call(inps, attn_mask, labels)


def t5():
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=2, decoder_start_token_id=0)
    return T5ForConditionalGeneration(cfg).eval()


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda tok: harness(ScaledGPT2(build("gpt2", torch.float32).config).eval(), tok), "logits differ"),
        (lambda tok: OwnCall(pretrained=build("gpt2", torch.float32), tokenizer=tok), "_model_call"),
        (lambda tok: harness(t5(), tok, backend="seq2seq"), "seq2seq"),
    ],
)  # fmt: skip
def test_what_it_does_not_reproduce_runs_the_original(make, why, tokenizer, strict, monkeypatch, caplog):
    lm = make(tokenizer)
    rng = np.random.default_rng(1)
    reqs = [(("a", "b"), [int(t) for t in rng.integers(1, V, 6)], [int(t) for t in rng.integers(1, V, 2)])] * 3
    expected = lm._loglikelihood_tokens(reqs, disable_tqdm=True)
    tm.patch(["lm_eval"])
    with pytest.raises(PatchFallbackError, match=why):
        lm._loglikelihood_tokens(reqs, disable_tqdm=True)
    monkeypatch.delenv("TURBOMETRICS_PATCH_STRICT")
    with caplog.at_level(logging.INFO, logger="turbometrics.patch"):
        assert lm._loglikelihood_tokens(reqs, disable_tqdm=True) == expected
    assert any("fallback" in r.getMessage() and why in r.getMessage() for r in caplog.records)


def test_batch_size_auto_probes_the_fused_path(tokenizer, strict, monkeypatch):
    """The patched probe never makes the whole logits (no log-softmax) and shrinks on out-of-memory errors as
    the harness's own does; the batch it picks then scores every request as the original."""
    import turbometrics._lm_eval_fused as fused

    model = build("llama", torch.float64)  # another batch size than the reference's: float64 has no shape rounding
    reqs = requests_for(model, np.random.default_rng(4))
    lm = harness(model, tokenizer, batch_size="auto", max_batch_size=32, softmax_dtype="float64")
    expected = harness(model, tokenizer, softmax_dtype="float64")._loglikelihood_tokens(reqs, disable_tqdm=True)
    tm.patch(["lm_eval"])
    real_scores = fused._scores
    seen = []

    def scores(lm_, split, ids, rows, targets):  # an allocator that fails above 12 sequences a batch
        seen.append(ids.shape[0])
        if ids.shape[0] > 12:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes")
        return real_scores(lm_, split, ids, rows, targets)

    def no_log_softmax(*a, **k):
        raise AssertionError("the whole logits' log-softmax was made")

    monkeypatch.setattr(fused, "_scores", scores)
    monkeypatch.setattr(hf.F, "log_softmax", no_log_softmax)
    got = lm._detect_batch_size(reqs)  # accelerate's find_executable_batch_size shrinks it to what runs
    first = seen.index(got)
    assert seen[0] == 32 and got <= 12 and all(s > 12 for s in seen[:first]) and set(seen[first:]) == {got}
    assert accelerated("lm_eval.HFLM._detect_batch_size") >= 1
    assert_same(lm._loglikelihood_tokens(reqs, disable_tqdm=True), expected, 1e-9)


@pytest.mark.slow  # ~12 s: a fresh interpreter imports the harness and builds its tasks
def test_the_harness_command_runs_patched(tokenizer, tmp_path):
    """``python -m turbometrics.patch -m lm_eval ...``: the harness's own command line, unchanged, on a saved
    model and local tasks; every log-likelihood call accelerated, none fell back."""
    import os
    import subprocess
    import sys

    model_dir = tmp_path / "model"
    build("llama", torch.float32).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    write_tasks(tmp_path, np.random.default_rng(5))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TURBOMETRICS_PATCH_STRICT": "1"}
    cmd = [sys.executable, "-m", "turbometrics.patch", "--report", "-m", "lm_eval", "--model", "hf",
           "--model_args", f"pretrained={model_dir},max_length={MAX_LEN}", "--tasks", "tm_mc,tm_ppl",
           "--include_path", str(tmp_path), "--batch_size", "4", "--device", "cpu"]  # fmt: skip
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "tm_mc" in out.stdout and "tm_ppl" in out.stdout
    assert re.search(r"lm_eval.HFLM._loglikelihood_tokens: [1-9]\d* accelerated, 0 fallback", out.stderr), out.stderr[
        -2000:
    ]


def test_generation_batches_keep_the_harness_probe(tokenizer, strict, monkeypatch):
    """generate_until sizes model.generate's batches (a KV cache) by the probe without requests: that one stays
    the harness's own; loglikelihood_rolling's (the same call) is the fused one."""
    model = build("gpt2", torch.float64)
    lm = harness(model, tokenizer, batch_size="auto", max_batch_size=4)
    tm.patch(["lm_eval"])

    def generate_until():
        return lm._detect_batch_size()

    def loglikelihood_rolling():
        return lm._detect_batch_size()

    with pytest.raises(PatchFallbackError, match="generation"):
        generate_until()
    start = accelerated("lm_eval.HFLM._detect_batch_size")
    assert loglikelihood_rolling() == 4
    assert accelerated("lm_eval.HFLM._detect_batch_size") == start + 1


def test_cached_continuations_of_other_lengths_are_scored_where_they_stand(tokenizer, strict):
    """Two requests of one window split differently ((ctx, [a]) and (ctx[:-1], [ctx[-1], a])) share the
    harness's one-token cache entry. Ours scores each at its own positions: the answers the harness gives
    without the cache (with it, 0.4.13 gathers a shorter continuation from the leading positions)."""
    model = build("llama", torch.float64)
    ctx = [5, 17, 33, 90, 2]
    reqs = [(("a", "b"), ctx, [44]), (("c", "d"), ctx[:-1], [ctx[-1], 44]), (("e", "f"), ctx, [45])]
    uncached = harness(model, tokenizer, logits_cache=False)._loglikelihood_tokens(reqs, disable_tqdm=True)
    lm = harness(model, tokenizer)
    tm.patch(["lm_eval"])
    assert_same(lm._loglikelihood_tokens(reqs, disable_tqdm=True), uncached, 1e-12)
