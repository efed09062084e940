"""Perplexity from an LM head's input: hidden states and the head's weight, never the whole logits.

``logits = hidden @ weight.T + bias`` is (tokens, vocabulary): for a 128,256-word
vocabulary far larger than the hidden states. Here it is produced a block of
rows and a slice of the vocabulary at a time, by the matrix multiply at hand
(NumPy's BLAS for ndarrays, PyTorch's for tensors, in the inputs' own dtype as
the model's forward pass would), and each slice is folded at once into a
running log-sum-exp per row (the fused NLL kernel's, carried across slices:
``_dense.fold_rows``) and the target's logit. Memory is O(rows x slice).
Positions that are not counted (``ignore_index``, ``mask``) are never
multiplied. On CUDA a slice is whole rows of the vocabulary where enough fit,
folded behind its multiply on the caller's stream (else column slices, each
folded on a second stream while the next is multiplied), and the host waits
once a call (``_rows_torch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import _validate
from ._arrays import is_torch, on_input_device
from ._ext import _dense
from ._metric import once
from .language_model import REDUCTIONS, Perplexity, _to_float64

DEFAULT_BUDGET = 64 << 20  # bytes of logits held at once (one block of rows x one vocabulary slice) on the CPU
GPU_BUDGET_MAX = 240 << 20  # on a GPU: a quarter of the free memory, at most this, so that with the fold's
#   state the call's extra peak stays under 256 MiB (issue 41). For Llama 3's head (d = 4,096, V = 128,256, bf16)
#   it holds 937 whole rows of the vocabulary: 35 multiplies for 8 x 4,096 rows. On an H100 (2e568f3) they take
#   52.0 ms alone against 48.2 ms for the whole GEMM, and the call 58.9 ms; the plan before (192 MiB in two
#   buffers of 4,096 rows x 10,240 columns, 104 slices) took 61.0 ms in the same run.
GPU_OVERLAP = True  # on CUDA, column slices each folded on a second stream (False: behind its GEMM, for timings)
GPU_OVERLAP_ROWS = False  # on CUDA, whole-row blocks in two buffers too, each folded on a second stream while the
#   next block is multiplied (blocks of half the height in the same budget): an option for timings
#   (tools/gpu_lm_eval.py, where the fold is a third of the GEMM's time), not yet measured
_MAX_ROWS = 4096  # rows per block of column slices: keeps slices wide enough for an efficient multiply
_FULL_ROWS = 1024  # when this many rows of the whole vocabulary fit the budget, a slice is the whole vocabulary
_GPU_FULL_ROWS = 512  # on a GPU, this many (not yet measured against other heights: tools/gpu_head_anchors.py)


def _check_head(hidden: Any, weight: Any, bias: Any):
    """(hidden as (N, d), weight (V, d), bias (V,) or None, the targets' shape, kind) for either backend."""
    if is_torch(hidden):
        if not (is_torch(weight) and (bias is None or is_torch(bias))):
            raise TypeError("weight and bias must be torch tensors like hidden")
        if not hidden.dtype.is_floating_point:
            raise TypeError(f"hidden must be floating point, got {hidden.dtype}")
        arrays = {"weight": weight, "bias": bias}
        for name, x in arrays.items():
            if x is not None and (x.dtype != hidden.dtype or x.device != hidden.device):
                raise TypeError(
                    f"{name} must have hidden's dtype and device ({hidden.dtype}, {hidden.device}); "
                    f"got {x.dtype} on {x.device}"
                )
        h = hidden.detach()
        w = weight.detach()
        b = None if bias is None else bias.detach()
        kind = "torch"
    else:
        arrays = {}
        for name, x in (("hidden", hidden), ("weight", weight), ("bias", bias)):
            if x is None and name == "bias":
                continue
            a = _validate.as_array(x, name)
            _validate.require_float(a, name)
            if a.code not in (_validate.F32, _validate.F64):
                raise TypeError(
                    f"{name}: NumPy inputs must be float32 or float64 (pass torch tensors for "
                    f"bfloat16/float16, multiplied in their own type)"
                )
            arrays[name] = a.data
        h, w, b = arrays["hidden"], arrays["weight"], arrays.get("bias")
        if not (h.dtype == w.dtype and (b is None or b.dtype == h.dtype)):
            raise TypeError(
                f"hidden, weight and bias must share a dtype; got {h.dtype}, {w.dtype}"
                + ("" if b is None else f", {b.dtype}")
            )
        kind = "numpy"
    if h.ndim < 2 or h.shape[-1] < 1:
        raise ValueError(f"hidden must have shape (..., d) with a hidden size d >= 1, got {tuple(h.shape)}")
    if w.ndim != 2 or w.shape[1] != h.shape[-1] or w.shape[0] < 1:
        raise ValueError(f"weight must have shape (vocabulary, {h.shape[-1]}), got {tuple(w.shape)}")
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise ValueError(f"bias must have shape ({w.shape[0]},), got {tuple(b.shape)}")
    return h.reshape(-1, h.shape[-1]), w, b, tuple(h.shape[:-1]), kind


def _plan(
    rows: int, vocab: int, d: int, itemsize: int, chunk: int | None, budget: int, gpu: bool = False
) -> tuple[int, int, int]:
    """(rows per block, vocabulary columns per slice, slice buffers): the buffers and a block's copy of the
    hidden rows (d wide) in at most ``budget`` bytes. Whole rows of the vocabulary in one buffer when enough of
    them fit (_FULL_ROWS, _GPU_FULL_ROWS on a GPU; one fold a block). Else slices sized for _MAX_ROWS rows, in
    one buffer on the CPU and two on a GPU (one is multiplied while the other is folded)."""
    if chunk is None and budget // ((vocab + d) * itemsize) >= min(rows, _GPU_FULL_ROWS if gpu else _FULL_ROWS):
        chunk = vocab
    slots = 2 if gpu and (chunk is None or chunk < vocab or GPU_OVERLAP_ROWS) else 1
    if chunk is None:
        block = max(1, min(rows, _MAX_ROWS))
        chunk = max(256, (budget // (block * itemsize) - d) // slots) // 64 * 64
    chunk = min(chunk, vocab)
    block = max(1, min(rows, budget // ((slots * chunk + d) * itemsize)))
    # Equal blocks, not full ones and a small remainder: each block multiplies the whole weight, and a
    # small block's multiply costs about a full one's (the weight slices are packed again for it). On an H100
    # (d364354, Llama 3's head, 32,768 rows) 35 equal blocks of 937 rows multiplied in 50.2 ms, blocks of 1,024
    # or 768 rows in 54.0, 896 or 512 in 56.5 (a smaller last block each): the count of blocks, not cuBLAS's
    # tiles, sets the time.
    blocks = -(-rows // block)
    return -(-rows // blocks), chunk, slots


def _mapped(logit_map, logits):
    """``logit_map(logits)``, checked: an elementwise map keeps the slice's shape and dtype."""
    out = logit_map(logits)
    if type(out) is not type(logits) or out.shape != logits.shape or out.dtype != logits.dtype:
        raise TypeError(
            f"logit_map must return an array like its input ({type(logits).__name__} "
            f"{tuple(logits.shape)} {logits.dtype}); got {type(out).__name__} "
            f"{tuple(getattr(out, 'shape', ()))} {getattr(out, 'dtype', None)}"
        )
    return out


def _budget(h, kind: str, max_bytes: int | None) -> int:
    """Bytes of logits (and hidden rows) to hold at once: the caller's, else 64 MiB on the CPU, else from the GPU's
    free memory, at most GPU_BUDGET_MAX."""
    if max_bytes is not None:
        return _validate.check_int(max_bytes, "max_bytes", minimum=1)
    if kind == "torch" and h.device.type == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info(h.device)
        return int(min(max(free // 4, DEFAULT_BUDGET), GPU_BUDGET_MAX))
    return DEFAULT_BUDGET


def _head_nll(hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map=None, max_bytes=None):
    """Per-token NLL as float64 on the host (0 where not counted) and the counted mask."""
    nll, counted, _ = _head_pass(
        hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map, max_bytes
    )
    return nll, counted


def _head_pass(
    hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map=None, max_bytes=None, greedy=False
):
    """``_head_nll``'s (nll, counted) and, with ``greedy``, whether each counted target is its row's first argmax
    (bool, False where not counted), the fold then in float64 throughout (``_dense.score_rows``)."""
    if logit_map is not None and not callable(logit_map):
        raise TypeError(
            f"logit_map must be callable (an elementwise map of the logits), got {type(logit_map).__name__}"
        )
    h, w, b, shape, kind = _check_head(hidden, weight, bias)
    vocab = int(w.shape[0])
    t64, counted = _validate.as_targets(targets, shape, vocab, ignore_index=ignore_index, mask=mask)
    if chunk is not None:
        chunk = _validate.check_int(chunk, "chunk", minimum=1)
    threads = _validate.check_threads(num_threads)
    idx = np.flatnonzero(counted.reshape(-1))  # only counted positions are multiplied
    nll = np.zeros(t64.size)
    top = np.zeros(t64.size, bool) if greedy else None
    if idx.size == 0:
        return nll.reshape(shape), counted, None if top is None else top.reshape(shape)
    itemsize = int(h.element_size() if kind == "torch" else h.itemsize)
    gpu = kind == "torch" and h.device.type == "cuda"
    block, width, slots = _plan(idx.size, vocab, int(h.shape[-1]), itemsize, chunk, _budget(h, kind, max_bytes), gpu)
    if kind == "torch":  # every block in one call: on a GPU the fold's state stays there until the end
        out = _rows_torch(h, w, b, idx, t64[idx], width, threads, logit_map, greedy=greedy, block=block, slots=slots)
        parts = [(idx, out)]
    else:
        blocks = [idx[r0 : r0 + block] for r0 in range(0, idx.size, block)]
        parts = [
            (rows, _rows_numpy(h[rows], w, b, t64[rows], width, threads, logit_map, greedy=greedy)) for rows in blocks
        ]
    for rows, out in parts:
        if greedy:
            nll[rows], top[rows] = out
        else:
            nll[rows] = out
    return nll.reshape(shape), counted, None if top is None else top.reshape(shape)


def _finish(state: tuple, targets: np.ndarray):
    """The rows' NLLs from a fold's state (max, sum, bad, target logit[, argmax]); with the argmax, also whether
    each target is its row's first argmax (a row whose log-softmax is NaN, from NaN or +inf logits or all
    -inf: torch.argmax's first NaN, index 0)."""
    M, S, bad, tl, *arg = state
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (M - tl) + np.log(S)  # as the kernels' row_nll: no cancellation with huge equal logits
    out[bad.astype(bool)] = np.nan
    if not arg:
        return out
    return out, np.where(np.isnan(out), targets == 0, arg[0] == targets)


class _CpuFold:
    """Rows' running log-sum-exp on the CPU, one logits slice at a time (``_dense.fold_rows``): the state
    (max, sum, NaN/+inf flag, target logit) that ``_gpu_head.HeadFold`` keeps on a GPU, with the same methods.
    With ``greedy`` each row's first argmax too, and the sums in float64 throughout (``_dense.score_rows``)."""

    def __init__(self, targets: np.ndarray, threads: int, greedy: bool = False):
        n = len(targets)
        self.targets, self.threads = targets, threads
        self.arg = np.full(n, -1, np.int64) if greedy else None
        self.state = (np.full(n, -np.inf), np.zeros(n), np.zeros(n, np.uint8), np.zeros(n))

    def add(self, logits: Any, v0: int, r0: int = 0) -> None:
        """Fold ``logits`` (rows, width), the rows [r0, r0 + rows) and the vocabulary's columns [v0, v0 + width):
        a float32/float64 ndarray or a contiguous torch CPU tensor of any float dtype."""
        if is_torch(logits):
            import torch

            codes = {
                torch.float16: _validate.F16,
                torch.bfloat16: _validate.BF16,
                torch.float32: _validate.F32,
                torch.float64: _validate.F64,
            }
            x = (logits.view(torch.int16) if logits.dtype == torch.bfloat16 else logits).numpy()
            code = codes[logits.dtype]
        else:
            x, code = logits, _validate.F32 if logits.dtype == np.float32 else _validate.F64
        part = slice(r0, r0 + x.shape[0])
        M, S, bad, tl = self.state
        if self.arg is None:
            _dense.fold_rows(x[:, None, :], code, M[part], S[part], bad[part], self.threads)
        else:
            _dense.score_rows(x[:, None, :], code, v0, M[part], S[part], bad[part], self.arg[part], self.threads)
        t = self.targets[part]
        live = np.flatnonzero((t >= v0) & (t < v0 + x.shape[1]))
        tl[r0 + live] = _to_float64(x[live, t[live] - v0], code)

    def result(self) -> tuple:
        return self.state if self.arg is None else (*self.state, self.arg)


def _rows_numpy(hb, w, b, t_rows, width, threads, logit_map=None, greedy=False):
    n = len(t_rows)
    fold = _CpuFold(t_rows, threads, greedy)
    buf = np.empty(n * width, dtype=hb.dtype)
    for v0 in range(0, w.shape[0], width):
        v1 = min(v0 + width, w.shape[0])
        logits = buf[: n * (v1 - v0)].reshape(n, v1 - v0)
        np.matmul(hb, w[v0:v1].T, out=logits)
        if b is not None:
            logits += b[v0:v1]
        if logit_map is not None:
            logits = np.ascontiguousarray(_mapped(logit_map, logits))
        fold.add(logits, v0)
    return _finish(fold.result(), t_rows)


def _autocast(torch: Any, device_type: str) -> bool:
    try:
        return bool(torch.is_autocast_enabled(device_type))
    except TypeError:  # torch < 2.4 takes no device type
        return bool(torch.is_autocast_cpu_enabled() if device_type == "cpu" else torch.is_autocast_enabled())


class _Serial:
    """Slices made and folded one after the other: one slice buffer, nothing to order. On the CPU; in the
    simulator, whose fold copies each slice over; on CUDA without GPU_OVERLAP, the fold behind its GEMM on the
    caller's stream (the stream's order keeps the buffer until it was read)."""

    slots = 1

    def reuse(self, slot: int) -> None:
        pass

    @contextmanager
    def folding(self, slot: int, logits: Any) -> Iterator[None]:
        yield

    def join(self) -> None:
        pass


class _Overlap:
    """The GEMMs on the caller's stream, the folds on a second one, two slice buffers: one slice is folded while
    the next is multiplied into the other buffer. Events order them on the device, never the host: a fold
    waits for its GEMM, a GEMM for the fold that last read its buffer. ``join`` puts the caller's stream
    behind every fold: before the copy back, and before what the call made on that stream is freed (torch
    then reuses the memory in that stream's order)."""

    slots = 2

    def __init__(self, torch: Any, device: Any):
        self.cuda = torch.cuda
        self.main = torch.cuda.current_stream(device)
        self.side = torch.cuda.Stream(device)
        self.made = [torch.cuda.Event() for _ in range(self.slots)]
        self.read = [torch.cuda.Event() for _ in range(self.slots)]

    def reuse(self, slot: int) -> None:
        self.main.wait_event(self.read[slot])  # (an event never recorded: no wait)

    @contextmanager
    def folding(self, slot: int, logits: Any) -> Iterator[None]:
        self.made[slot].record(self.main)
        self.side.wait_event(self.made[slot])
        logits.record_stream(self.side)  # a tensor made per slice (logit_map, autocast): kept until its fold ran
        with self.cuda.stream(self.side):  # device_rows queues the fold on the current stream
            yield
        self.read[slot].record(self.side)

    def join(self) -> None:
        self.main.wait_stream(self.side)


def _blocks(torch: Any, h: Any, rows: np.ndarray, block: int) -> Iterator[tuple[int, Any]]:
    """(first row, its hidden rows) for each block of ``rows`` (ascending). On a GPU the index goes over once,
    from pinned memory behind the queued work, and each block is gathered there; with every row counted,
    blocks are slices of h, no gather. On the CPU each block is gathered from the host index."""
    n = len(rows)
    if h.device.type != "cuda":
        for r0 in range(0, n, block):
            yield r0, h[torch.as_tensor(rows[r0 : r0 + block], device=h.device)]
    elif h.is_contiguous() and np.array_equal(rows, np.arange(len(h))):
        for r0 in range(0, n, block):
            yield r0, h[r0 : r0 + block]
    else:
        index = torch.from_numpy(np.ascontiguousarray(rows, np.int64)).pin_memory().to(h.device, non_blocking=True)
        for r0 in range(0, n, block):
            yield r0, h.index_select(0, index[r0 : r0 + block])


def _buffers(torch: Any, h: Any, size: int, slots: int) -> list | None:
    """``slots`` buffers of ``size`` elements that slices are multiplied into, or None for ``F.linear``'s fresh
    tensors: under autocast (it does not cover out= calls) and on other devices. On the CPU a fresh (rows,
    width) tensor a slice was handed back to the OS and faulted in again each time (the multiply ran at a
    third of its speed: docs/performance.md)."""
    if h.device.type not in ("cpu", "cuda") or _autocast(torch, h.device.type):
        return None
    return [torch.empty(size, dtype=h.dtype, device=h.device) for _ in range(slots)]


def _multiply(torch: Any, hb: Any, w: Any, b: Any, v0: int, v1: int, buf: Any) -> Any:
    """The logits of ``hb`` for the vocabulary's columns [v0, v1) as the model's head makes them: ``F.linear``,
    or into ``buf`` the mm/addmm it calls (the same bits)."""
    ws, bs = w[v0:v1], None if b is None else b[v0:v1]
    if buf is None:
        return torch.nn.functional.linear(hb, ws, bs)
    out = buf[: len(hb) * (v1 - v0)].view(len(hb), v1 - v0)
    if bs is None:
        return torch.mm(hb, ws.t(), out=out)
    return torch.addmm(bs, hb, ws.t(), out=out)


@on_input_device
def _rows_torch(
    h, w, b, rows, t_rows, width, threads, logit_map=None, on_gpu: bool | None = None, greedy=False, block=None,
    slots=1,
):  # fmt: skip
    """The rows ``rows`` of h (ascending), a block of ``block`` rows (default: all) and a slice of the
    vocabulary at a time, multiplied as ``F.linear`` does and each slice folded by our kernel: ``_CpuFold`` on
    the CPU, ``_gpu_head.HeadFold`` on a GPU (``on_gpu``, default: where h is; True with CPU tensors runs the CUDA
    simulator's copy of the kernel in tests). On CUDA every block folds into one state on the device and the
    host waits once, for the state's copy back; with two ``slots`` each fold overlaps the next GEMM
    (``_Overlap``), with one it is queued behind its GEMM on the caller's stream."""
    import torch

    cuda = h.device.type == "cuda"
    on_gpu = h.device.type != "cpu" if on_gpu is None else on_gpu
    block = max(1, len(rows) if block is None else block)
    fold: Any  # the fold's interface: add(logits, v0, r0), result()
    if on_gpu:
        from ._gpu_head import HeadFold

        fold = HeadFold(t_rows, greedy, h.device if cuda else None)
    else:
        fold = _CpuFold(t_rows, threads, greedy)
    pipe = _Overlap(torch, h.device) if cuda and GPU_OVERLAP and slots == 2 else _Serial()
    bufs = _buffers(torch, h, min(block, len(rows)) * width, pipe.slots)
    k = 0  # slices made so far
    try:
        with torch.no_grad():
            for r0, hb in _blocks(torch, h, rows, block):
                for v0 in range(0, w.shape[0], width):
                    slot, k = k % pipe.slots, k + 1
                    pipe.reuse(slot)
                    logits = _multiply(
                        torch, hb, w, b, v0, min(v0 + width, w.shape[0]), None if bufs is None else bufs[slot]
                    )
                    if logit_map is not None:
                        logits = _mapped(logit_map, logits).contiguous()
                    with pipe.folding(slot, logits):
                        fold.add(logits, v0, r0)
                    del logits  # before the next slice is made: one slice a buffer
                del hb  # before the next block is gathered
    finally:
        pipe.join()
    return _finish(fold.result(), t_rows)


def token_nll_from_hidden(
    hidden: Any,
    weight: Any,
    targets: Any,
    bias: Any = None,
    ignore_index: int | None = None,
    mask: Any = None,
    *,
    chunk: int | None = None,
    max_bytes: int | None = None,
    num_threads: int | None = None,
    logit_map: Callable[[Any], Any] | None = None,
) -> Any:
    """``-log_softmax(hidden @ weight.T + bias)[target]`` per position, float64, without the logits.

    Equals ``F.cross_entropy(F.linear(hidden, weight, bias), targets, reduction="none")``
    (logits in the inputs' dtype, as the model computes them; sums in float64).

    Parameters
    ----------
    hidden : array-like (..., d)
        The LM head's input (the base model's last hidden state). NumPy
        float32/float64, or a torch tensor of any float dtype (bfloat16 and
        float16 are multiplied in their own type, as the model's forward pass;
        CUDA tensors run on the GPU).
    weight : array-like (V, d)
        The head's weight (``model.get_output_embeddings().weight``), same dtype.
    targets : array-like (...)
        Integer targets shaped like ``hidden.shape[:-1]``, in [0, V) where counted.
    bias : array-like (V,), optional
    ignore_index : int, optional
    mask : array-like of bool, optional
        As in ``token_nll``: those positions are not counted (and never multiplied).
    chunk : int, optional
        Vocabulary columns per slice (default: as many as keep one block of
        logits within ``max_bytes``).
    max_bytes : int, optional
        Bytes held at once: a block's logits slice and its copy of the
        hidden rows (on a GPU, where fewer than 512 whole rows of the
        vocabulary fit, two column slices: one is multiplied while the other
        is folded). Default: 64 MiB on the CPU (BLAS is at full speed well
        before that); on a GPU a quarter of the free memory, at most 240 MiB
        (937 whole rows of Llama 3's vocabulary for d = 4,096 in bf16).
    num_threads : int, optional
        Threads of the fold kernel (BLAS picks its own).
    logit_map : callable, optional
        An elementwise map the model applies to its logits after the head,
        e.g. Gemma 2's soft-capping ``lambda x: torch.tanh(x / 30.0) * 30.0``
        or a scale. It is given each slice of logits (an ndarray or a tensor
        of the inputs' dtype) and must return one of the same shape and dtype.

    Returns
    -------
    numpy.ndarray
        float64, shaped like ``targets`` (0 where not counted; NaN for a row
        whose logits hold NaN or +inf).

    Raises
    ------
    TypeError
        For non-float inputs, mixed dtypes, devices or array kinds (NumPy
        inputs must be float32/float64).
    ValueError
        For shapes that do not match, targets outside [0, V) where counted,
        or ``chunk < 1``.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> h = np.eye(2, 3, dtype=np.float32); w = np.zeros((4, 3), np.float32)
    >>> tm.token_nll_from_hidden(h, w, [0, 3]).round(6)  # zero logits: uniform over 4
    array([1.386294, 1.386294])
    """
    return _head_nll(hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map, max_bytes)[0]


def token_scores_from_hidden(
    hidden: Any,
    weight: Any,
    targets: Any,
    bias: Any = None,
    ignore_index: int | None = None,
    mask: Any = None,
    *,
    chunk: int | None = None,
    max_bytes: int | None = None,
    num_threads: int | None = None,
    logit_map: Callable[[Any], Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each position's target log-probability and whether the target is the greedy choice, without the logits.

    What an evaluation harness scores a continuation by (lm-evaluation-harness's
    ``loglikelihood``: the sum of the log-probabilities, and whether every token
    is the argmax): ``log_softmax(hidden @ weight.T + bias)[target]`` and
    ``argmax(logits) == target``, in one read of each slice of logits. The
    logits are made in the inputs' dtype (as the model's head makes them); the
    log-sum-exp is taken in float64 throughout (every exp in float64), so a
    log-probability is accurate to float64 rounding (about 1e-15 relative), as
    ``log_softmax(logits.double())`` would give it.

    Parameters
    ----------
    hidden, weight, targets, bias, ignore_index, mask, chunk, max_bytes, num_threads, logit_map
        As in ``token_nll_from_hidden``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The log-probabilities (float64, shaped like ``targets``; 0 where not
        counted) and the greedy flags (bool; False where not counted). Ties
        follow ``torch.argmax``: the first maximal index is the greedy one. A
        row whose log-softmax is NaN (its logits hold NaN or +inf, or are all
        -inf) has a NaN log-probability and, as ``torch.argmax`` of that NaN
        row gives index 0, is greedy only for target 0.

    Raises
    ------
    TypeError, ValueError
        As ``token_nll_from_hidden``.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> h = np.ones((2, 1), np.float32); w = np.array([[1.0], [2.0], [2.0]], np.float32)
    >>> logp, greedy = tm.token_scores_from_hidden(h, w, [1, 2])
    >>> logp.round(6), greedy  # logits (1, 2, 2): the tie goes to the first
    (array([-0.861995, -0.861995]), array([ True, False]))
    """
    nll, counted, greedy = _head_pass(
        hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map, max_bytes, greedy=True
    )
    return np.where(counted, -nll, 0.0), greedy & counted


def perplexity_from_hidden(
    hidden: Any,
    weight: Any,
    targets: Any,
    bias: Any = None,
    ignore_index: int | None = None,
    mask: Any = None,
    reduction: str = "token",
    *,
    chunk: int | None = None,
    max_bytes: int | None = None,
    num_threads: int | None = None,
    logit_map: Callable[[Any], Any] | None = None,
) -> Any:
    """Perplexity of ``targets`` under the logits ``hidden @ weight.T + bias``, never materialised.

    Equals ``exp(F.cross_entropy(F.linear(hidden, weight, bias), targets))``
    with ``reduction="token"``; memory is O(rows x slice), not O(rows x V).

    Parameters
    ----------
    hidden, weight, targets, bias, ignore_index, mask, chunk, max_bytes, num_threads, logit_map
        As in ``token_nll_from_hidden``.
    reduction : {"token", "sequence", "none"}
        As in ``perplexity`` ((N, d) hidden states are one sequence).

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    TypeError, ValueError
        As ``token_nll_from_hidden``; also for hidden states not (N, d) or
        (B, T, d), or an unknown reduction.

    Examples
    --------
    >>> import numpy as np, turbometrics as tm
    >>> h = np.ones((3, 2), np.float32); w = np.zeros((4, 2), np.float32)
    >>> tm.perplexity_from_hidden(h, w, [0, 1, 3])  # zero logits: uniform over 4
    4.0
    """
    _validate.check_choice(reduction, "reduction", REDUCTIONS)
    shape = tuple(getattr(hidden, "shape", np.shape(hidden)))
    if len(shape) not in (2, 3):
        raise ValueError(f"hidden must have shape (N, d) or (B, T, d) for a perplexity, got {shape}")
    if 0 in shape[:-1]:
        raise ValueError(f"hidden is empty (shape {shape}): no token to score")
    nll, counted = _head_nll(
        hidden, weight, targets, bias, ignore_index, mask, chunk, num_threads, logit_map, max_bytes
    )
    return once(Perplexity(reduction=reduction, input="nll"), nll, None, counted, None, None)
