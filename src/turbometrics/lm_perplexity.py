"""Perplexity of a causal language model over token sequences: batched sliding windows.

Where the model can be split before its head (Hugging Face causal LMs, or a
caller's ``(body, head)`` pair: ``_split_model``), the head's input is scored
by ``lm_head`` a vocabulary slice at a time and the logits are never made.
Otherwise the model's logits are reduced to per-token NLL batch by batch by
the fused kernel (``token_nll``; on the GPU when the logits are there), so
memory is bounded by one batch of logits. Both give the same exact sums.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from . import _split_model, _validate
from ._arrays import is_torch, to_host
from ._exact import ExactSum
from .language_model import token_nll
from .lm_head import _head_nll

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
    if isinstance(token_ids, (list, tuple)) and not token_ids:
        raise ValueError(f"{name} holds no sequence")
    if isinstance(token_ids, (list, tuple)) and not np.isscalar(token_ids[0]):
        seqs = [  # an empty list has no dtype: the emptiness is the error (below)
            np.zeros(0, np.int64)
            if isinstance(s, (list, tuple)) and not s
            else _validate.as_int64(to_host(s), f"{name}[{i}]")
            for i, s in enumerate(token_ids)
        ]
    else:
        a = _validate.as_int64(to_host(token_ids), name)
        if a.ndim not in (1, 2):
            raise ValueError(
                f"{name} must be one sequence (T,), a batch (B, T) or a list of sequences; got shape {a.shape}"
            )
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
        out.append(s)
    return out


def _caller(
    model: Callable, like: Any, device: Any, extract: Callable[[Any], Any] = _split_model.logits_of
) -> Callable[[np.ndarray], Any]:
    """A function (B, T) int64 ndarray -> the model's logits (``extract`` of its output), fed as it takes.

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
                return extract(model(torch.from_numpy(ids).to(dev)))

        return call_module
    if torch is not None and (is_torch(like) or device is not None):
        dev = device or like.device
        return lambda ids: extract(model(torch.from_numpy(ids).to(dev)))
    return lambda ids: extract(model(ids))


def _split(model: Any, fuse_head: bool | None, token_ids: Any, device: Any) -> _split_model.Split | None:
    """The model split before its head, or None for the logits path (an error if fuse_head asks for it)."""
    if isinstance(model, tuple):
        if len(model) != 2:
            raise TypeError(f"model: a tuple must be a (body, head) pair, got {len(model)} items")
        if fuse_head is False:
            raise ValueError("fuse_head=False needs a model that returns logits, not a (body, head) pair")
        body, head = model
        return _split_model.pair(body, head, lambda f: _caller(f, token_ids, device, _split_model.hidden_of))
    if fuse_head is False:
        return None
    split = _split_model.huggingface(model, device) if "torch" in sys.modules else "torch is not imported"
    if isinstance(split, str):
        if fuse_head:
            raise ValueError(
                f"fuse_head=True, but the model cannot be split before its head: {split}. "
                f"Pass a (body, head) pair, or fuse_head=False"
            )
        return None
    return split


def lm_perplexity(
    model: Callable,
    token_ids: Any,
    max_length: int = 1024,
    stride: int | None = None,
    batch_size: int = 8,
    ignore_index: int | None = None,
    reduction: str = "token",
    *,
    labels: Any = None,
    vocab_size: int | None = None,
    device: Any = None,
    fuse_head: bool | None = None,
    progress: bool = False,
) -> Any:
    """Perplexity of a causal LM on ``token_ids``, with the sliding windows of the transformers guide.

    The result is the exact average NLL over the scored tokens. (The guide's
    published loop instead weights each window's mean loss by its label count
    minus one, which is off by one token per window after the first; we sum
    the per-token NLLs.)

    Parameters
    ----------
    model : callable or (body, head)
        Maps an integer array (B, T) to logits (B, T, V): a PyTorch module
        (CPU or CUDA; it gets a LongTensor on its own device and runs under
        ``inference_mode``), a Hugging Face causal LM (scored without its
        logits: see ``fuse_head``), or any function (it gets an int64
        ndarray, or a tensor when ``token_ids`` is one). Or a pair
        ``(body, head)``: ``body`` maps ids to the head's input (B, T, d)
        (called like a model; ``.last_hidden_state`` of its output is used if
        it has one), ``head`` is a ``torch.nn.Linear``, a ``(weight, bias)``
        pair or a weight (V, d); scored as ``perplexity_from_hidden``.
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
    fuse_head : bool, optional
        Score the head's input with ``perplexity_from_hidden`` (logits a
        vocabulary slice at a time, never the (B, T, V) batch) instead of the
        model's logits. Default (None): for Hugging Face causal LMs
        (``base_model``'s last hidden state, ``get_output_embeddings()``, and
        the logit scaling and soft-capping their forward applies), checked
        against the model's own logits on a short probe first (a warning and
        the logits path if they differ). True: the same, an error if the model
        cannot be split. False: the model's logits. Same windows, same sums.
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
    max_length, stride, batch_size = _check_options(
        model, max_length, stride, batch_size, ignore_index, reduction, fuse_head
    )
    seqs = _sequences(token_ids, ignore_index)
    targets_of = seqs if labels is None else _labels(labels, seqs)
    split = _split(model, fuse_head, token_ids, device)
    call = None if split is not None and split.source == "pair" else _caller(model, token_ids, device)
    vocab_size = _vocab_size(model, vocab_size, split, call)
    _check_vocab(seqs, _validate.check_int(vocab_size, "vocab_size"), ignore_index)
    if labels is not None:
        _check_vocab(targets_of, vocab_size, _IGNORE, "labels")
    if split is not None and split.source == "huggingface":
        split = _verified(model, split, call, seqs[0], ignore_index, fuse_head)
    plan = [w for i, s in enumerate(seqs) for w in windows(len(s), max_length, stride, i)]
    nll_of = _nll_of(split, call)
    sums, counts = _score(plan, seqs, targets_of, nll_of, batch_size, ignore_index, progress)
    return _reduce(sums, counts, reduction)


def _check_options(
    model: Any,
    max_length: int,
    stride: int | None,
    batch_size: int,
    ignore_index: int | None,
    reduction: str,
    fuse_head: bool | None,
) -> tuple[int, int, int]:
    """``lm_perplexity``'s options checked, in the order its errors are raised; (max_length, stride, batch_size)."""
    _validate.check_choice(reduction, "reduction", LM_REDUCTIONS)
    if fuse_head is not None and not isinstance(fuse_head, bool):
        raise TypeError(f"fuse_head must be True, False or None, got {fuse_head!r}")
    if not callable(model) and not isinstance(model, tuple):
        raise TypeError(
            f"model must be callable (B, T) ids -> (B, T, V) logits, or a (body, head) pair; got {type(model).__name__}"
        )
    max_length = _validate.check_int(max_length, "max_length")
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2 (a token of context and one to score), got {max_length}")
    stride = max_length if stride is None else _validate.check_int(stride, "stride")
    if not 1 <= stride <= max_length:
        raise ValueError(f"stride must be in [1, max_length={max_length}], got {stride}")
    batch_size = _validate.check_int(batch_size, "batch_size", minimum=1)
    if ignore_index is not None:
        _validate.check_int(ignore_index, "ignore_index")
    return max_length, stride, batch_size


def _vocab_size(
    model: Any, vocab_size: int | None, split: _split_model.Split | None, call: Callable[[np.ndarray], Any] | None
) -> Any:
    """The vocabulary: as given, else the split head's rows, ``model.config.vocab_size``, or the logits'
    last axis on a one-token probe (ids are checked against it before the model sees them)."""
    if vocab_size is None and split is not None:
        vocab_size = int(split.weight.shape[0])
    if vocab_size is None:
        vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab_size is None:
        assert call is not None  # only a (body, head) pair has no call, and it is split
        probe = np.zeros((1, 1), np.int64)
        logits = call(probe)
        _check_logits(logits, probe.shape)
        vocab_size = int(logits.shape[-1])
    return vocab_size


def _verified(
    model: Any,
    split: _split_model.Split,
    call: Callable[[np.ndarray], Any] | None,
    first: np.ndarray,
    ignore_index: int | None,
    fuse_head: bool | None,
) -> _split_model.Split | None:
    """A Hugging Face split, if it gives the model's own logits on the first 16 ids of ``first``; else None
    (the logits path) with a warning, or an error when ``fuse_head=True`` asked for the split."""
    assert call is not None  # a Hugging Face model is callable
    probe = first[:16].copy()[None]
    if ignore_index is not None:
        probe[probe == ignore_index] = 0
    why = _split_model.verify(model, split, call, probe)
    if why is None:
        return split
    if getattr(model, "training", False):
        why += " (the model is in training mode, where dropout changes every forward pass: call model.eval())"
    if fuse_head:
        raise ValueError(
            f"fuse_head=True, but {type(model).__name__} applies something to its logits that "
            f"turbometrics does not reproduce: {why}. Known: logit_scale, logits_scaling, "
            f"final_logit_softcapping, logits_soft_cap (after the head). Pass fuse_head=False, or a (body, head) pair"
        )
    warnings.warn(f"lm_perplexity: scoring {type(model).__name__}'s logits (fuse_head=False): {why}", stacklevel=3)
    return None


def _nll_of(
    split: _split_model.Split | None, call: Callable[[np.ndarray], Any] | None
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """(ids, targets) of a batch -> per-token NLL (B, T) float64 on the host: through the split head
    (the logits never made), or from the model's logits. Only one batch of logits or hidden states is
    alive at a time: each is dropped when the function returns, before the next forward pass."""
    if split is not None:

        def through_head(ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
            hidden = split.body(ids)
            _check_logits(hidden, ids.shape, "hidden states (B, T, d)")
            return _head_nll(
                hidden,
                split.weight,
                targets,
                split.bias,
                ignore_index=_IGNORE,
                mask=None,
                chunk=None,
                num_threads=None,
                logit_map=split.logit_map,
            )[0]

        return through_head
    assert call is not None  # only a (body, head) pair has no call, and it is split

    def from_logits(ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
        logits = call(ids)
        _check_logits(logits, ids.shape)
        return np.asarray(to_host(token_nll(logits, targets, ignore_index=_IGNORE)), dtype=np.float64)

    return from_logits


def _score(
    plan: list[Window],
    seqs: list[np.ndarray],
    targets_of: list[np.ndarray],
    nll_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    batch_size: int,
    ignore_index: int | None,
    progress: bool,
) -> tuple[list[ExactSum], np.ndarray]:
    """The windows of ``plan`` through the model ``batch_size`` at a time: each sequence's exact NLL sum and
    its count of scored tokens."""
    from tqdm import tqdm

    sums = [ExactSum() for _ in seqs]
    counts = np.zeros(len(seqs), np.int64)
    batches = range(0, len(plan), batch_size)
    for start in tqdm(batches, desc="lm_perplexity", unit="batch", disable=not progress):
        batch = plan[start : start + batch_size]
        ids, targets = _batch(seqs, targets_of, batch, ignore_index)
        nll = nll_of(ids, targets)
        scored = targets != _IGNORE
        for row, w in enumerate(batch):
            sums[w.seq].add(nll[row][scored[row]])
            counts[w.seq] += int(scored[row].sum())
    return sums, counts


def _reduce(sums: list[ExactSum], counts: np.ndarray, reduction: str) -> Any:
    """Corpus perplexity ("token"), per-sequence perplexities ("none", NaN where nothing was scored), or their
    mean over the sequences that were scored ("mean")."""
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
        raise ValueError(
            f"labels must match token_ids in shape: {[len(a) for a in out][:4]} vs "
            f"{[len(b) for b in seqs][:4]} (lengths of the first sequences)"
        )
    return out


def _batch(
    seqs: list[np.ndarray], labels: list[np.ndarray], batch: list[Window], ignore_index: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded input ids (pad id 0) and next-token targets (-100 where not scored)."""
    width = max(w.end - w.begin for w in batch)
    ids = np.zeros((len(batch), width), np.int64)
    targets = np.full((len(batch), width), _IGNORE, np.int64)
    for row, w in enumerate(batch):
        s = seqs[w.seq]
        n = w.end - w.begin
        window = s[w.begin : w.end]
        ids[row, :n] = (
            window if ignore_index is None or ignore_index >= 0 else np.where(window == ignore_index, 0, window)
        )
        # position i predicts token begin + i + 1; scored when that token is in [score_from, end)
        lo = w.score_from - w.begin - 1
        t = labels[w.seq][w.score_from : w.end]  # the tokens themselves unless labels were given
        targets[row, lo : lo + len(t)] = t
        if ignore_index is not None:
            seg = targets[row, lo : lo + len(t)]
            seg[t == ignore_index] = _IGNORE
    return ids, targets


def _check_vocab(seqs: list[np.ndarray], vocab_size: int, ignore_index: int | None, name: str = "token_ids") -> None:
    for i, s in enumerate(seqs):
        live = s if ignore_index is None else s[s != ignore_index]
        if live.size and live.max() >= vocab_size:
            raise ValueError(
                f"{name}[{i}] holds id {int(live.max())}, outside the vocabulary of {vocab_size} (the model's logits)"
            )


def _check_logits(logits: Any, shape: tuple, what: str = "logits of shape (B, T, V)") -> None:
    got = tuple(getattr(logits, "shape", ()))
    if len(got) != 3 or got[:2] != tuple(shape):
        raise ValueError(
            f"model must return {what} = ({shape[0]}, {shape[1]}, ...) "
            f"for input ids of shape {tuple(shape)}; got shape {got}"
        )
