"""Token-ID input for BLEU and ROUGE: integer sequences instead of text (RL rewards, self-BLEU on IDs).

Hypotheses (predictions) are an integer array or tensor (B, L), where positions equal to ``pad_id`` are
not tokens, or a list of integer sequences. References, per segment (not sacrebleu's streams): an array
(B, L) (one reference each) or (B, R, L), or a list whose item i is one integer sequence or a list of
them. The numbers equal the same metric on the IDs written as words (``" ".join(map(str, ids))``):
BLEU with ``tokenize="none"`` (whatever ``tokenize`` says: IDs are already tokens), ROUGE with its
default tokenizer. Token IDs must be non-negative (rouge-score would read ``-5`` as ``5``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as V
from .._arrays import is_device_array, is_torch, to_host


def _is_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple, np.ndarray)) or is_torch(x) or is_device_array(x)


def is_token_sequence(x: Any) -> bool:
    """One sequence of token IDs: a tensor, a numeric array, or a list/tuple holding no str."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iufcb"
    if is_torch(x) or is_device_array(x):
        return True
    return isinstance(x, (list, tuple)) and not any(isinstance(t, str) for t in x)


def is_token_input(x: Any) -> bool:
    """A batch of token IDs: tensors and numeric arrays (float ones are then refused by name), or a list
    of token sequences (decided by its first non-empty item; a list of texts or of str tokens is not)."""
    if isinstance(x, np.ndarray) or is_torch(x) or is_device_array(x):
        return is_token_sequence(x)
    if not isinstance(x, (list, tuple)) or not x:
        return False
    for item in x:
        if isinstance(item, str) or item is None or not is_token_sequence(item):
            return False
        if len(item):
            return True
    return True


def refuse(x: Any, metric: str, why: str) -> None:
    """TypeError for token IDs given to a metric defined on text."""
    if is_token_input(x):
        raise TypeError(f"{metric} takes text, not token IDs ({why}); detokenize first, or use BLEU or ROUGE")


def _one(seq: Any, name: str, pad_id: int | None) -> np.ndarray:
    if isinstance(seq, (list, tuple)) and not seq:  # an empty sequence has no dtype to check
        return np.zeros(0, np.int64)
    a = V.as_int_array(seq, name)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of token IDs, got shape {a.shape}")
    return a if pad_id is None else a[a != pad_id]


def _pack(seqs: list[np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(s) for s in seqs), np.int64, len(seqs))
    off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    tok = np.concatenate([s.astype(np.int64, copy=False) for s in seqs]) if seqs else np.zeros(0, np.int64)
    _check_values(tok, name)
    return tok, off


def _check_values(tok: np.ndarray, name: str) -> None:
    if tok.size and tok.min() < 0:
        raise ValueError(f"{name}: token IDs must be >= 0 (after removing pad_id), found {int(tok.min())}")


def _rows(a: np.ndarray, name: str, pad_id: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A (B, L) array's rows without the pad positions: (tokens, offsets)."""
    keep = np.ones(a.shape, bool) if pad_id is None else a != pad_id
    off = np.zeros(a.shape[0] + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=off[1:])
    tok = a[keep].astype(np.int64, copy=False)
    _check_values(tok, name)
    return tok, off


def _check_pad(pad_id: Any) -> int | None:
    return None if pad_id is None else V.check_int(pad_id, "pad_id")


def as_sequences(x: Any, name: str, pad_id: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Token-ID sequences as (int64 tokens, int64 offsets (B + 1))."""
    pad_id = _check_pad(pad_id)
    if isinstance(x, (list, tuple)):
        return _pack([_one(to_host(s), f"{name}[{i}]", pad_id) for i, s in enumerate(x)], name)
    a = V.as_int_array(to_host(x), name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be (B, L) token IDs or a list of sequences, got shape {a.shape}")
    return _rows(a, name, pad_id)


def as_token_references(x: Any, n: int, name: str = "references",
                        pad_id: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """References per segment: (tokens, offsets per reference, seg (n + 1): segment i's references are
    references seg[i]..seg[i + 1])."""
    pad_id = _check_pad(pad_id)
    if isinstance(x, (list, tuple)):
        if len(x) != n:
            raise ValueError(f"{name} has {len(x)} entries but there are {n} hypotheses")
        seqs, counts = [], np.zeros(n, np.int64)
        for i, item in enumerate(x):
            item = to_host(item)
            several = getattr(item, "ndim", 1) == 2 or (isinstance(item, (list, tuple)) and len(item) > 0
                                                         and _is_seq(item[0]))
            group = list(item) if several else [item]
            if not group:
                raise ValueError(f"{name}[{i}] holds no reference")
            seqs += [_one(to_host(s), f"{name}[{i}]", pad_id) for s in group]
            counts[i] = len(group)
        tok, off = _pack(seqs, name)
    else:
        a = V.as_int_array(to_host(x), name)
        if a.ndim not in (2, 3) or a.shape[0] != n:
            raise ValueError(f"{name} must be ({n}, L) or ({n}, R, L) token IDs, got shape {a.shape}")
        if a.ndim == 3 and a.shape[1] == 0:
            raise ValueError(f"{name} holds no reference (R = 0)")
        r = 1 if a.ndim == 2 else a.shape[1]
        tok, off = _rows(a.reshape(n * r, a.shape[-1]), name, pad_id)
        counts = np.full(n, r, np.int64)
    seg = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=seg[1:])
    return tok, off, seg


def joined(hyp: tuple[np.ndarray, np.ndarray], refs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
    """Hypotheses and references in one (tokens, offsets) with sequence indices: (tok, off, hyp_seq,
    ref_seq, seg)."""
    h_tok, h_off = hyp
    n = len(h_off) - 1
    if refs is None:
        return h_tok, h_off, np.arange(n, dtype=np.int64), np.zeros(0, np.int64), np.zeros(n + 1, np.int64)
    r_tok, r_off, seg = refs
    tok = np.concatenate([h_tok, r_tok])
    off = np.concatenate([h_off, r_off[1:] + h_off[-1]])
    return tok, off, np.arange(n, dtype=np.int64), n + np.arange(len(r_off) - 1, dtype=np.int64), seg
