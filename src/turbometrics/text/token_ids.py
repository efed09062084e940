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

from .. import _validate
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
    a = _validate.as_int64(seq, name)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of token IDs, got shape {a.shape}")
    return a if pad_id is None else a[a != pad_id]


def _pack(seqs: list[np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(s) for s in seqs), np.int64, len(seqs))
    off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    tok = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
    _check_values(tok, name)
    return tok, off


def _check_values(tok: Any, name: str) -> None:
    if len(tok) and int(tok.min()) < 0:
        raise ValueError(f"{name}: token IDs must be >= 0 (after removing pad_id), found {int(tok.min())}")


def _host(x: Any) -> np.ndarray:
    return x.cpu().numpy() if is_torch(x) else np.asarray(x)


def _rows(a: Any, name: str, pad_id: int | None) -> tuple[Any, np.ndarray]:
    """An int64 (B, L) array's rows without the pad positions: (tokens, host offsets). A torch tensor
    stays on its device (the same operations as for an ndarray)."""
    if pad_id is None:
        tok, lens = a.reshape(-1), np.full(a.shape[0], a.shape[1], np.int64)
    else:
        keep = a != pad_id
        tok, lens = a[keep], _host(keep.sum(1))
    off = np.zeros(a.shape[0] + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    _check_values(tok, name)
    return tok, off


def _check_pad(pad_id: Any) -> int | None:
    return None if pad_id is None else _validate.check_int(pad_id, "pad_id")


def _int_array(x: Any, name: str, on_device: bool) -> Any:
    """An int64 ndarray, or with ``on_device`` an int64 torch tensor left where it is (the GPU path compacts
    CUDA tensors on their device instead of copying them to the host and back). int64 on both: torch would
    compare a narrower tensor with a pad_id its dtype cannot hold by wrapping it (uint8's 255 == -1)."""
    if not (on_device and is_torch(x)) or str(x.dtype) == "torch.uint64":  # (checked for int64's range there)
        return _validate.as_int64(to_host(x), name)
    if x.dtype.is_floating_point or x.dtype.is_complex or str(x.dtype) == "torch.bool":
        raise TypeError(f"{name} must hold integers, got dtype {x.dtype}")
    return x.detach().long()


def as_sequences(x: Any, name: str, pad_id: Any = None, on_device: bool = False) -> tuple[Any, np.ndarray]:
    """Token-ID sequences as (int64 tokens, int64 host offsets (B + 1)); with ``on_device`` the tokens of
    a (B, L) torch tensor stay a tensor on its device."""
    pad_id = _check_pad(pad_id)
    if isinstance(x, (list, tuple)):
        return _pack([_one(to_host(s), f"{name}[{i}]", pad_id) for i, s in enumerate(x)], name)
    a = _int_array(x, name, on_device)
    if a.ndim != 2:
        raise ValueError(f"{name} must be (B, L) token IDs or a list of sequences, got shape {tuple(a.shape)}")
    return _rows(a, name, pad_id)


def as_token_references(
    x: Any, n: int, name: str = "references", pad_id: Any = None, on_device: bool = False
) -> tuple[Any, np.ndarray, np.ndarray]:
    """References per segment: (tokens, offsets per reference, seg (n + 1): segment i's references are
    references seg[i]..seg[i + 1]). In a (B, R, L) array a reference row that is all ``pad_id`` is absent
    (segments may have fewer references), unless all of a segment's rows are: then one empty reference.
    ``on_device`` as in ``as_sequences``."""
    pad_id = _check_pad(pad_id)
    if isinstance(x, (list, tuple)):
        if len(x) != n:
            raise ValueError(f"{name} has {len(x)} entries but there are {n} hypotheses")
        seqs, counts = [], np.zeros(n, np.int64)
        for i, item in enumerate(x):
            item = to_host(item)
            several = getattr(item, "ndim", 1) == 2 or (
                isinstance(item, (list, tuple)) and len(item) > 0 and _is_seq(item[0])
            )
            group = list(item) if several else [item]
            if not group:
                raise ValueError(f"{name}[{i}] holds no reference")
            seqs += [_one(to_host(s), f"{name}[{i}]", pad_id) for s in group]
            counts[i] = len(group)
        tok, off = _pack(seqs, name)
    else:
        a = _int_array(x, name, on_device)
        if a.ndim not in (2, 3) or a.shape[0] != n:
            raise ValueError(f"{name} must be ({n}, L) or ({n}, R, L) token IDs, got shape {tuple(a.shape)}")
        if a.ndim == 3 and a.shape[1] == 0:
            raise ValueError(f"{name} holds no reference (R = 0)")
        r = 1 if a.ndim == 2 else a.shape[1]
        flat, counts = a.reshape(n * r, a.shape[-1]), np.full(n, r, np.int64)
        if pad_id is not None and r > 1:  # a reference row all padding is absent (sacrebleu's None), unless
            empty = (flat == pad_id).all(1).reshape(n, r)  # all of the segment's are: one empty reference
            empty[empty.all(1), 0] = False
            flat, counts = flat[~empty.reshape(-1)], _host((~empty).sum(1)).astype(np.int64)
        tok, off = _rows(flat, name, pad_id)
    seg = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=seg[1:])
    return tok, off, seg


def joined(hyp: tuple[Any, np.ndarray], refs: tuple[Any, np.ndarray, np.ndarray] | None = None):
    """Hypotheses and references in one (tokens, offsets) with sequence indices: (tok, off, hyp_seq,
    ref_seq, seg). Tokens are a torch tensor on its device if either side's are."""
    h_tok, h_off = hyp
    n = len(h_off) - 1
    if refs is None:
        return h_tok, h_off, np.arange(n, dtype=np.int64), np.zeros(0, np.int64), np.zeros(n + 1, np.int64)
    r_tok, r_off, seg = refs
    tok: Any  # a torch tensor where either side is one, else an ndarray
    if is_torch(h_tok) or is_torch(r_tok):
        import torch

        dev = (h_tok if is_torch(h_tok) else r_tok).device
        tok = torch.cat([torch.as_tensor(t, device=dev) for t in (h_tok, r_tok)])
    else:
        tok = np.concatenate([h_tok, r_tok])
    off = np.concatenate([h_off, r_off[1:] + h_off[-1]])
    return tok, off, np.arange(n, dtype=np.int64), n + np.arange(len(r_off) - 1, dtype=np.int64), seg


def on_gpu(x: Any, device: str | None) -> bool:
    """Whether token IDs go to the GPU kernels: ``device`` if given, else whether they live on a GPU."""
    from .._gpu import use_gpu

    return use_gpu(device, x if not isinstance(x, (list, tuple)) else None)


def like_input(result: np.ndarray, x: Any) -> Any:
    """A per-segment result in the input's kind: a tensor on its device for torch, a device array for
    Numba/CuPy device input, else the ndarray."""
    if is_torch(x):
        import torch

        return torch.as_tensor(result, device=x.device)
    if is_device_array(x):
        if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):  # CuPy: on the input's device
            import cupy

            with x.device:
                return cupy.asarray(result)
        from numba import cuda

        return cuda.to_device(result)  # (a Numba array's device is the current one: numba's own rule)
    return result


MAX_LCS_CELLS = 2.0**38  # ROUGE-L's work limit, rouge.hpp's (the CPU path's): m x n token pairs


def bleu_rows_gpu(tok, off, hyp, ref_seq, seg, order: int) -> np.ndarray:
    """BLEU statistics rows [hyp_len, ref_len, correct_1..N, total_1..N], the counts made on the GPU."""
    from .. import _gpu

    lens = np.diff(off)
    matches = _gpu.ngram_matches(tok, off, hyp, ref_seq, seg, order, per_ref=False)
    return bleu_from_counts(lens[hyp], lens[ref_seq], seg, matches)


def bleu_from_counts(h_len, r_len, seg, matches) -> np.ndarray:
    """``bleu_rows_gpu``'s arithmetic: the hypotheses' lengths, the references' (segment i's at [seg[i],
    seg[i + 1])) and the clipped matches (segments, order) made rows."""
    order = matches.shape[1]
    rows = np.zeros((len(h_len), 2 + 2 * order), np.int64)
    rows[:, 0] = h_len
    if len(h_len):  # the closest reference length, the shorter on a tie
        key = np.abs(r_len - np.repeat(h_len, np.diff(seg))) * (1 << 32) + r_len
        rows[:, 1] = np.minimum.reduceat(key, seg[:-1]) % (1 << 32)
    rows[:, 2 : 2 + order] = matches
    rows[:, 2 + order :] = np.maximum(0, h_len[:, None] - np.arange(order)[None, :])
    return rows


def rouge_rows_gpu(tok, off, pred, ref_seq, seg, kinds: list[int]) -> np.ndarray:
    """(n, len(kinds) * 3) ROUGE (P, R, F) of token-ID pairs: n-gram overlaps and LCS lengths on the GPU,
    then rouge.hpp's arithmetic (the best reference by F, the first on ties)."""
    from .. import _gpu

    lens = np.diff(off)
    p_len, r_len = np.repeat(lens[pred], np.diff(seg)), lens[ref_seq]
    max_n = max([k for k in kinds if k < 10], default=0)
    overlap: Any = _gpu.ngram_matches(tok, off, pred, ref_seq, seg, max_n, per_ref=True) if max_n else None
    lcs: Any = None
    if any(k >= 10 for k in kinds):
        worst = int(np.argmax(p_len * r_len)) if len(r_len) else 0
        if len(r_len) and float(p_len[worst]) * float(r_len[worst]) > MAX_LCS_CELLS:
            raise ValueError(
                f"ROUGE-L of {int(r_len[worst])} x {int(p_len[worst])} tokens is over the limit of "
                f"{int(MAX_LCS_CELLS)} token pairs; split the texts"
            )
        p_seq = np.repeat(pred, np.diff(seg))  # pair j: reference ref_seq[j], prediction p_seq[j]
        lcs = _gpu.lcs(tok, off[ref_seq], off[ref_seq + 1], tok, off[p_seq], off[p_seq + 1])
    return rouge_from_counts(p_len, r_len, seg, overlap, lcs, kinds)


def rouge_from_counts(p_len, r_len, seg, overlap, lcs, kinds: list[int]) -> np.ndarray:
    """``rouge_rows_gpu``'s arithmetic: pair j's prediction and reference lengths, its n-gram overlaps (pairs,
    max n) and its LCS length, the pairs of segment i at [seg[i], seg[i + 1])."""
    out = np.zeros((len(seg) - 1, len(kinds), 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        for q, k in enumerate(kinds):
            if k < 10:
                pc, tc = np.maximum(0, p_len - k + 1), np.maximum(0, r_len - k + 1)
                hits = np.where((pc > 0) & (tc > 0), overlap[:, k - 1], 0)
                den_p, den_r = np.maximum(pc, 1), np.maximum(tc, 1)
            else:  # ROUGE-L; ROUGE-Lsum of one sentence each is the same
                live = (p_len > 0) & (r_len > 0)
                hits, den_p, den_r = np.where(live, lcs, 0), np.maximum(p_len, 1), np.maximum(r_len, 1)
            p, r = hits / den_p, hits / den_r
            f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
            j = _first_best(f, seg)
            out[:, q] = np.stack([p[j], r[j], f[j]], axis=1)
    return out.reshape(len(seg) - 1, 3 * len(kinds))


def _first_best(f: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Per segment i, the index in [seg[i], seg[i + 1]) (never empty) of the first highest ``f`` (finite):
    np.argmax of each group, without a Python loop over the segments."""
    counts = np.diff(seg)
    if not len(counts):
        return np.zeros(0, np.int64)
    hit = np.flatnonzero(f == np.repeat(np.maximum.reduceat(f, seg[:-1]), counts))
    group = np.repeat(np.arange(len(counts)), counts)[hit]
    return hit[np.concatenate([[True], group[1:] != group[:-1]])]
