"""Perplexity of a causal language model over token sequences: batched sliding windows.

The model's logits are reduced to per-token NLL batch by batch by the fused
kernel (``token_nll``; on the GPU when the logits are there), so memory is
bounded by one batch of logits and nothing the size of the logits is copied.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from . import _validate as V
from ._arrays import is_torch, to_host
from ._exact import ExactSum
from .language_model import token_nll

__all__ = ["lm_perplexity", "windows"]

LM_REDUCTIONS = ("token", "mean", "none")
_IGNORE = -100


class Window(NamedTuple):
    """Tokens ``[begin, end)`` of sequence ``seq`` go in; tokens ``[score_from, end)`` are scored."""

    seq: int
    begin: int
    end: int
    score_from: int


def windows(length: int, max_length: int, stride: int, seq: int = 0) -> Iterator[Window]:
    """The sliding windows of the transformers guide "Perplexity of fixed-length models".

    A window starts every ``stride`` tokens and holds up to ``max_length``;
    it scores the tokens that no earlier window scored and that have at
    least one token of context inside it (position t predicts token t + 1).
    With ``stride < max_length`` every token after the first is scored
    exactly once; with ``stride == max_length`` (plain chunks) the first
    token of each chunk has no context and is not scored, as in the guide.
    """
    prev_end = 0
    for begin in range(0, length, stride):
        end = min(begin + max_length, length)
        yield Window(seq, begin, end, max(prev_end, begin + 1))
        prev_end = end
        if end == length:
            break


def _sequences(token_ids: Any, ignore_index: int | None, name: str = "token_ids") -> list[np.ndarray]:
    """One id sequence or a list of them (ragged), as int64 host arrays (ids >= 0 or ignore_index)."""
    if isinstance(token_ids, (list, tuple)) and token_ids and not np.isscalar(token_ids[0]):
        seqs = [V.as_int_array(to_host(s), f"{name}[{i}]") for i, s in enumerate(token_ids)]
    else:
        a = V.as_int_array(to_host(token_ids), name)
        if a.ndim not in (1, 2):
            raise ValueError(f"{name} must be one sequence (T,), a batch (B, T) or a list of sequences; "
                             f"got shape {a.shape}")
        seqs = [a] if a.ndim == 1 else list(a)
    if not seqs:
        raise ValueError(f"{name} holds no sequence")
    out = []
    for i, s in enumerate(seqs):
        if s.ndim != 1:
            raise ValueError(f"{name}[{i}] must be 1-D, got shape {s.shape}")
        if s.size == 0:
            raise ValueError(f"{name}[{i}] is empty")
        neg = s[(s < 0) & (s != ignore_index)] if ignore_index is not None else s[s < 0]
        if neg.size:
            raise ValueError(f"{name}[{i}] holds a negative id ({int(neg[0])})")
        out.append(np.asarray(s, dtype=np.int64))
    return out


def _logits_of(output: Any) -> Any:
    """The logits in a model's output: the array itself, ``.logits`` (Hugging Face), or a tuple's first item."""
    if hasattr(output, "logits"):
        return output.logits
    if isinstance(output, (tuple, list)) and output:
        return output[0]
    return output


def _caller(model: Callable, like: Any, device: Any) -> Callable[[np.ndarray], Any]:
    """A function (B, T) int64 ndarray -> the model's logits, feeding the model what it takes.

    A torch module gets a LongTensor on its parameters' device (or ``device``),
    under ``torch.inference_mode()``; another callable gets a LongTensor on
    ``device`` if given (or where ``token_ids`` were, for a tensor), else the ndarray.
    """
    torch = sys.modules.get("torch")  # a torch model or tensor means torch is imported already
    if torch is None and device is not None:
        import torch
    if torch is not None and isinstance(model, torch.nn.Module):
        params = list(model.parameters())
        dev = device or (params[0].device if params else "cpu")

        def call_module(ids):
            with torch.inference_mode():
                return _logits_of(model(torch.from_numpy(ids).to(dev)))
        return call_module
    if torch is not None and (is_torch(like) or device is not None):
        dev = device or like.device
        return lambda ids: _logits_of(model(torch.from_numpy(ids).to(dev)))
    return lambda ids: _logits_of(model(ids))


def lm_perplexity(model: Callable, token_ids: Any, max_length: int = 1024, stride: int | None = None,
                  batch_size: int = 8, ignore_index: int | None = None, reduction: str = "token",
                  *, labels: Any = None, vocab_size: int | None = None, device: Any = None,
                  progress: bool = False) -> Any:
    """Perplexity of a causal LM on ``token_ids``, with the sliding windows of the transformers guide.

    The result is the exact average NLL over the scored tokens. (The guide's
    published loop instead weights each window's mean loss by its label count
    minus one, which is off by one token per window after the first; we sum
    the per-token NLLs.)

    Parameters
    ----------
    model : callable
        Maps an integer array (B, T) to logits (B, T, V): a PyTorch module
        (CPU or CUDA; it gets a LongTensor on its own device and runs under
        ``inference_mode``), a Hugging Face causal LM (``.logits`` of its
        output is used), or any function (it gets an int64 ndarray, or a
        tensor when ``token_ids`` is one).
    token_ids : array-like or list of sequences
        One sequence, a (B, T) batch, or a list of sequences of any lengths
        (right-padded here, padding masked).
    max_length, stride : int
        Windows (see ``windows``) start every ``stride`` tokens (default
        ``max_length``: plain chunks), hold up to ``max_length``, and score only new tokens.
    batch_size : int
        Windows through the model at a time.
    ignore_index : int, optional
        Tokens equal to it are not scored (they are fed to the model as they
        are, or as id 0 when ``ignore_index`` is negative).
    labels : array-like or list of sequences, optional
        Shaped like ``token_ids`` (Hugging Face's ``labels``): the token to
        score at each position, or -100 where nothing is scored, e.g. the
        prompt before a continuation, or the context before an answer word.
        Default: every token of ``token_ids`` (as the windows allow).
    reduction : {"token", "mean", "none"}
        ``"token"``: corpus perplexity, exp of total NLL / scored tokens.
        ``"mean"``: the mean of per-sequence perplexities (Hugging Face
        ``evaluate``'s ``mean_perplexity``). ``"none"``: per-sequence
        perplexities, float64 (NaN for a sequence with nothing scored).
    vocab_size : int, optional
        Default: ``model.config.vocab_size``, else learnt from one one-token
        forward pass; every id is checked against it before the model runs.
    device : torch device, optional
        Where the model's input goes (default: a module's parameters' device,
        or where ``token_ids`` are for a tensor).
    progress : bool
        A tqdm bar over batches.

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    TypeError, ValueError
        For ids that are not integers, negative or beyond the vocabulary, bad windows or options.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> uniform = lambda ids: np.zeros(ids.shape + (8,), np.float32)  # every token: 1/8
    >>> round(tm.lm_perplexity(uniform, np.arange(20) % 8, max_length=6, stride=3), 9)
    8.0
    """
    V.check_choice(reduction, "reduction", LM_REDUCTIONS)
    if not callable(model):
        raise TypeError(f"model must be callable (B, T) ids -> (B, T, V) logits, got {type(model).__name__}")
    max_length = V.check_int(max_length, "max_length")
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2 (a token of context and one to score), got {max_length}")
    stride = max_length if stride is None else V.check_int(stride, "stride")
    if not 1 <= stride <= max_length:
        raise ValueError(f"stride must be in [1, max_length={max_length}], got {stride}")
    batch_size = V.check_int(batch_size, "batch_size")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if ignore_index is not None:
        V.check_int(ignore_index, "ignore_index")
    seqs = _sequences(token_ids, ignore_index)
    targets_of = seqs if labels is None else _labels(labels, seqs)
    call = _caller(model, token_ids, device)
    if vocab_size is None:
        vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab_size is None:  # a one-token probe: ids are checked before the model sees them
        probe = np.zeros((1, 1), np.int64)
        logits = call(probe)
        _check_logits(logits, probe.shape)
        vocab_size = int(logits.shape[-1])
    _check_vocab(seqs, V.check_int(vocab_size, "vocab_size"), ignore_index)
    if labels is not None:
        _check_vocab(targets_of, vocab_size, _IGNORE, "labels")

    plan = [w for i, s in enumerate(seqs) for w in windows(len(s), max_length, stride, i)]
    sums = [ExactSum() for _ in seqs]
    counts = np.zeros(len(seqs), np.int64)
    from tqdm import tqdm

    batches = range(0, len(plan), batch_size)
    for start in tqdm(batches, desc="lm_perplexity", unit="batch", disable=not progress):
        batch = plan[start:start + batch_size]
        ids, targets = _batch(seqs, targets_of, batch, ignore_index)
        logits = call(ids)
        _check_logits(logits, ids.shape)
        nll = np.asarray(to_host(token_nll(logits, targets, ignore_index=_IGNORE)), dtype=np.float64)
        del logits  # before the next forward pass: one batch of logits alive at a time
        scored = targets != _IGNORE
        for row, w in enumerate(batch):
            sums[w.seq].add(nll[row][scored[row]])
            counts[w.seq] += int(scored[row].sum())
    totals = np.array([s.value() for s in sums])
    if reduction == "token":
        n = int(counts.sum())
        total = ExactSum()
        for part in sums:
            total = total.merge(part)
        return float(np.exp(total.value() / n)) if n else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        per_seq = np.exp(totals / counts)
    if reduction == "none":
        return per_seq
    live = counts > 0
    return float(np.mean(per_seq[live])) if live.any() else float("nan")


def _labels(labels: Any, seqs: list[np.ndarray]) -> list[np.ndarray]:
    """Per-position targets (-100: not scored), one sequence per token sequence, of the same lengths."""
    out = _sequences(labels, _IGNORE, "labels")
    if len(out) != len(seqs) or any(len(a) != len(b) for a, b in zip(out, seqs)):
        raise ValueError(f"labels must match token_ids in shape: {[len(a) for a in out][:4]} vs "
                         f"{[len(b) for b in seqs][:4]} (lengths of the first sequences)")
    return out


def _batch(seqs: list[np.ndarray], labels: list[np.ndarray], batch: list[Window],
           ignore_index: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded input ids (pad id 0) and next-token targets (-100 where not scored)."""
    width = max(w.end - w.begin for w in batch)
    ids = np.zeros((len(batch), width), np.int64)
    targets = np.full((len(batch), width), _IGNORE, np.int64)
    for row, w in enumerate(batch):
        s = seqs[w.seq]
        n = w.end - w.begin
        window = s[w.begin:w.end]
        ids[row, :n] = window if ignore_index is None or ignore_index >= 0 else np.where(window == ignore_index, 0,
                                                                                            window)
        # position i predicts token begin + i + 1; scored when that token is in [score_from, end)
        lo = w.score_from - w.begin - 1
        t = labels[w.seq][w.score_from:w.end]  # the tokens themselves unless labels were given
        targets[row, lo:lo + len(t)] = t
        if ignore_index is not None:
            seg = targets[row, lo:lo + len(t)]
            seg[t == ignore_index] = _IGNORE
    return ids, targets


def _check_vocab(seqs: list[np.ndarray], vocab_size: int, ignore_index: int | None, name: str = "token_ids") -> None:
    for i, s in enumerate(seqs):
        live = s if ignore_index is None else s[s != ignore_index]
        if live.size and live.max() >= vocab_size:
            raise ValueError(f"{name}[{i}] holds id {int(live.max())}, outside the vocabulary of "
                             f"{vocab_size} (the model's logits)")


def _check_logits(logits: Any, shape: tuple) -> None:
    got = tuple(getattr(logits, "shape", ()))
    if len(got) != 3 or got[:2] != tuple(shape):
        raise ValueError(f"model must return logits of shape (B, T, V) = ({shape[0]}, {shape[1]}, V) "
                         f"for input ids of shape {tuple(shape)}; got shape {got}")
