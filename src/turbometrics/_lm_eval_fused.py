"""lm-evaluation-harness 0.4.13's ``HFLM`` log-likelihoods through the fused LM head: no full log-softmax.

``HFLM._loglikelihood_tokens`` runs the model to its (batch, length, vocabulary) logits, takes
``log_softmax`` of all of them and keeps, per request, the continuation tokens' log-probabilities and
whether each is the argmax. Here the same batches are run through the model's body only (its last hidden
state), and only the continuation positions go through the head, a slice of the vocabulary at a time,
folded by ``lm_head``'s scoring pass (``token_scores_from_hidden``): the same requests, in the same batches
and order, with the same progress bar, cache hook and one-token-continuation cache, but O(rows x slice)
memory for the head. The log-probabilities are summed exactly (``_exact.exact_sum``: ``math.fsum``'s value)
from float64 values accurate to float64 rounding: the original's with ``softmax_dtype=float64`` to ~1e-15,
and closer to the truth than its default (the logits' own dtype).

Both entry points raise ``Fallback`` (before doing anything the caller could see) for what they do not
reproduce: a seq2seq model, a PEFT model, a model whose head cannot be split from its body or whose
split does not give the model's own logits on a probe (``_split_model.verify``), a subclass that calls
its model its own way (``_model_call``). Used by
``tm.patch(["lm_eval"])`` (``patch/_lm_eval``) and by ``turbometrics.lm_eval.HFLM``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _split_model
from ._exact import exact_sum
from .lm_head import token_scores_from_hidden
from .patch._dispatch import Fallback

_PROBE = 8  # tokens of the probe that checks a split against the model's own logits


def _autocast(lm: Any) -> Any:
    """The mixed-precision context of ``HFLM._model_call`` (the head's multiply runs under it there too)."""
    import torch

    dtype = getattr(lm, "mixed_precision_dtype", None)
    return torch.autocast(device_type=lm.device.type, dtype=dtype, enabled=dtype is not None)


def split_of(hf: Any, lm: Any) -> _split_model.Split:
    """``lm.model`` split into body and head, checked once per model (kept on ``lm``); Fallback if it cannot be."""
    import torch

    cached = lm.__dict__.get("_turbometrics_split")
    if cached is not None and cached[0] is lm.model:
        if isinstance(cached[1], str):
            raise Fallback(cached[1])
        return cached[1]
    why: str | _split_model.Split
    if getattr(lm, "backend", None) != "causal":
        why = f"a {getattr(lm, 'backend', 'non-causal')} model (only causal LMs are split)"
    elif any(getattr(type(lm), m) is not getattr(hf.HFLM, m) for m in ("_model_call", "_select_cont_toks")):
        why = f"{type(lm).__name__} calls its model or selects its logits its own way (_model_call, _select_cont_toks)"
    elif type(lm.model).__module__.split(".")[0] == "peft":
        why = "a PEFT model (its adapters wrap the base model)"
    else:
        why = _split_model.huggingface(lm.model, None)
    if not isinstance(why, str):
        split = why
        vocab = int(split.weight.shape[0])
        probe = (np.arange(1, _PROBE + 1, dtype=np.int64) % vocab)[None]
        with _autocast(lm):
            why = (
                _split_model.verify(
                    lm.model, split, lambda ids: lm._model_call(torch.from_numpy(ids).to(lm.device)), probe
                )
                or split
            )
    lm.__dict__["_turbometrics_split"] = (lm.model, why)
    if isinstance(why, str):
        raise Fallback(why)
    return why


def _scores(lm: Any, split: _split_model.Split, ids: np.ndarray, rows: np.ndarray, targets: np.ndarray):
    """(log-probabilities, greedy flags) of ``targets`` at the (batch, position) ``rows`` of the batch of ids
    (int64, on the host: the body puts them on the model's device)."""
    import torch

    with _autocast(lm):
        hidden = split.body(ids)
        shift = hidden.shape[1] - ids.shape[1]  # as the original: positions count from the output's end
        b, p = (torch.as_tensor(c, device=hidden.device) for c in (rows[:, 0], rows[:, 1] + shift))
        picked = hidden[b, p]
        # under autocast the body may return the autocast dtype: the head's multiply casts it back the same way
        picked = picked.to(split.weight.dtype)
        return token_scores_from_hidden(picked, split.weight, targets, split.bias, logit_map=split.logit_map)


def _rows(spans: list[tuple[int, int, int]]) -> np.ndarray:
    """The (batch row, position) of each scored token, answer after answer: an answer of k tokens whose input
    ends at ``end`` in batch row b is scored at (b, end - k) ... (b, end - 1). In NumPy: a rolling batch scores
    every position (65,504 rows for 32 x 2,048), which a list of Python tuples took ~80 ms to make."""
    b, end, k = np.asarray(spans, np.int64).reshape(-1, 3).T
    n = int(k.sum())
    first = np.cumsum(k) - k  # each answer's first row
    out = np.empty((n, 2), np.int64)
    out[:, 0] = np.repeat(b, k)
    out[:, 1] = np.arange(n) + np.repeat(end - k - first, k)
    return out


def _collate(req: tuple) -> tuple:
    toks = req[1] + req[2]  # longest first, as the original (its batch sizes and warnings rely on it)
    return -len(toks), tuple(toks)


def _one_token_key(req: tuple) -> list:
    return req[-2] + req[-1][:-1]


def loglikelihood_tokens(
    hf: Any, lm: Any, requests: list, disable_tqdm: bool = False, override_bs: int | None = None
) -> list[tuple[float, bool]]:
    """``HFLM._loglikelihood_tokens`` (``hf``: the ``lm_eval.models.huggingface`` module) for causal LMs."""
    import torch

    split = split_of(hf, lm)
    re_ord = hf.Collator(
        requests, sort_fn=_collate, group_by="contexts" if lm.logits_cache else None, group_fn=_one_token_key
    )
    n = len(re_ord)
    auto = lm.batch_size == "auto"
    batch_size = lm.batch_size if not auto else override_bs if override_bs is not None else 0
    batch_fn = lm._batch_scheduler if auto and n > 0 and not override_bs else None
    if batch_fn is not None:
        lm.batch_sizes = {}  # as the original: detect again for this set of requests
    pbar = hf.tqdm(total=len(requests), disable=(disable_tqdm or lm.rank != 0), desc="Running loglikelihood requests")
    res: list[tuple[float, bool]] = []
    proxy = torch.zeros(1, 1, 1)  # stands for a request's logits in the one-token-continuation cache
    for chunk in re_ord.get_batched(n=batch_size, batch_fn=batch_fn):
        inps = [_input_of(hf, lm, context_enc, continuation_enc) for _, context_enc, continuation_enc in chunk]
        inplens = [len(inp) for inp in inps]
        batched = np.zeros((len(inps), max(inplens)), np.int64)  # right-padded with 0, as pad_and_concat does
        for b, inp in enumerate(inps):
            batched[b, : len(inp)] = inp
        answers: list[tuple] = []  # (request strings, its first row, its end)
        spans: list[tuple[int, int, int]] = []  # (batch row, its input's end, tokens) of each answer
        targets: list[list[int]] = []
        first = 0
        for b, ((request_str, ctx_tokens, cont_toks), inplen) in enumerate(zip(chunk, inplens, strict=True)):
            for req_str, toks, _ in re_ord.get_cache(
                req_str=request_str, cxt_toks=ctx_tokens, cont_toks=cont_toks, logits=proxy
            ):
                spans.append((b, inplen, len(toks)))  # the last log-probability comes from the input's end
                targets.append(toks)
                answers.append((req_str, first, first + len(toks)))
                first += len(toks)
        targets_ = np.concatenate([np.asarray(toks, np.int64) for toks in targets])
        logp, greedy = _scores(lm, split, batched, _rows(spans), targets_)
        for req_str, a, z in answers:
            # (math.fsum's bits, without a list: 0.4 ms instead of 2.2 for 32 answers of 2,047 tokens here)
            answer = (exact_sum(logp[a:z]), bool(greedy[a:z].all()))
            res.append(answer)
            if req_str is not None:
                lm.cache_hook.add_partial("loglikelihood", req_str, answer)
            pbar.update(1)
    pbar.close()
    return re_ord.get_original(res)


def _window(lm: Any, context_enc: list, continuation_enc: list) -> list:
    """Context + continuation truncated from the left to ``max_length + 1`` tokens, without the last: the
    model's input for a request, as the original makes it."""
    return (context_enc + continuation_enc)[-(lm.max_length + 1) :][:-1]


def _input_of(hf: Any, lm: Any, context_enc: list, continuation_enc: list) -> list:
    """``_window`` with the original's checks and truncation warning."""
    assert len(context_enc) > 0
    assert len(continuation_enc) > 0
    assert len(continuation_enc) <= lm.max_length
    total = len(context_enc) + len(continuation_enc)
    if total > lm.max_length + 1:
        hf.eval_logger.warning(
            f"Combined length of context ({len(context_enc)}) and continuation ({len(continuation_enc)}) "
            f"exceeds model's maximum length ({lm.max_length}). "
            f"Truncating {total - lm.max_length + 1} tokens from the left."
        )
    return _window(lm, context_enc, continuation_enc)


def _caller_is(wanted: str, other: str, depth: int = 12) -> bool:
    """Whether ``wanted`` (a harness method's name) is found above this call before ``other`` is: the probe
    without requests serves loglikelihood_rolling and generate_until alike, and only the first scores."""
    import sys

    frame = sys._getframe(1)
    for _ in range(depth):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is None or frame.f_code.co_name == other:
            return False
        if frame.f_code.co_name == wanted:
            return True
    return False


def detect_batch_size(hf: Any, lm: Any, requests: Any = None, pos: int = 0) -> int:
    """``HFLM._detect_batch_size`` probing what the fused path holds: the body's forward pass at the longest
    length, then the head over the longest continuation's positions (the original: the whole logits and
    their log-softmax). Shrinks the batch on out-of-memory errors as the original does. Only for scoring:
    called without requests from anything but loglikelihood_rolling (generate_until sizes its generation
    batches with it), it falls back to the harness's own probe."""
    import torch

    if not requests and not _caller_is("loglikelihood_rolling", "generate_until"):
        # generate_until sizes model.generate's batches by it (a KV cache the fused probe does not hold)
        raise Fallback("a batch size for generation: the harness's own probe")
    split = split_of(hf, lm)
    if requests:
        _, context_enc, continuation_enc = requests[pos]
        length = len(_window(lm, context_enc, continuation_enc))
        cont = len(continuation_enc[-(lm.max_length + 1) :])
    else:
        length = cont = lm.max_length

    @hf.find_executable_batch_size(starting_batch_size=lm.max_batch_size)
    def forward_batch(batch_size: int) -> int:
        ids = np.ones((batch_size, length), np.int64)
        grid = np.mgrid[0:batch_size, length - cont : length]  # every scored (row, position)
        rows = np.stack([grid[0].ravel(), grid[1].ravel()], axis=1)
        targets = np.ones(len(rows), np.int64)
        for _ in range(5):  # as the original
            _scores(lm, split, ids, rows, targets)
        return batch_size

    try:
        batch_size = forward_batch()
    except RuntimeError as e:
        if "No executable batch size found" not in str(e):
            raise
        batch_size = 1
    if lm.world_size > 1:  # every rank takes the smallest
        gathered = lm.all_gather(torch.tensor([batch_size], device=lm.device)).cpu().detach().numpy().tolist()
        batch_size = min(gathered)
    hf.clear_torch_cache()
    return batch_size
