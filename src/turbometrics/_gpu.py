"""GPU dispatch for the array metrics: recognise device arrays, run the numba.cuda kernels, hand results back in the
caller's own type.

A PyTorch CUDA tensor, a CuPy array (anything with ``__cuda_array_interface__``) or a Numba device array runs on the
GPU with no copy of the scores to the host; ``device="cuda"`` sends host input there, ``device="cpu"`` brings device
input back. Device targets (and masks) stay there: the row kernels check them and report a status per row, and only
when one is out of range does the host look at them (``_validate``, the one validation layer, raises the CPU path's
error). Host targets are validated on the host and uploaded. Per-row results that a scalar is reduced from come back
with the statuses in one copy (so reductions are the CPU path's, bit for bit; ``_gpu_tally`` sums one-shot calls on
the device). Kernels and copies queue on the caller's current torch/CuPy stream, after the work that made the input.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import numpy as np

from . import _launch, _validate
from ._arrays import DEVICES, is_device_array, is_numba_device, is_torch, on_input_device, to_host
from ._gpu_pending import FORKED, EventPending

NGRAM_THREADS, NGRAM_BLOCKS = 128, 2048  # the n-gram kernel's blocks: 72 registers a thread; enough blocks for every SM
WARP_ROW_MAX_V = 2048  # rows up to this long get a warp each (TPB // 32 rows per block), longer ones a block
_TORCH_DTYPES: dict = {}  # numpy dtype -> torch dtype, filled on first use


def _torch_dtypes() -> dict:
    if not _TORCH_DTYPES:
        import torch

        _TORCH_DTYPES.update(
            {
                np.dtype(n): getattr(torch, n)
                for n in ("float16", "float32", "float64", "int16", "int32", "int64", "uint8")
            }
        )
    return _TORCH_DTYPES


def use_gpu(device: str | None, *arrays: Any) -> bool:
    """Whether to run on the GPU: ``device`` if given, else whether any input lives there."""
    if device is None:
        for a in arrays:  # (a loop: any() over a generator cost more than the checks on a small call)
            if a is not None and is_device_array(a):
                return True
        return False
    _validate.check_choice(device, "device", DEVICES)
    return device == "cuda"


_CUDA: tuple = ()  # (numba.cuda, _kernels.cuda) once a GPU was found: a call asks for them several times
_FORKED_FROM_GPU = False  # this process was forked from one that had used the GPU through us
_ORPHANS: list = []  # a forked child's inherited device and page-locked buffers, never freed there


def _after_fork_in_child() -> None:
    """CUDA does not survive fork(): a child of a process that used the GPU must not touch the parent's
    context (numba's handles, our cached views and streams); its first GPU call raises instead."""
    global _CUDA, _FORKED_FROM_GPU
    if _CUDA:
        _CUDA, _FORKED_FROM_GPU = (), True
        _VIEWS.clear()
        _STREAMS.clear()
        # The parent's buffers are kept, not freed: freeing them here would call the driver in the child
        _ORPHANS.append((dict(_PINNED), dict(_SCRATCH)))
        _PINNED.clear()
        _SCRATCH.clear()
        _launch.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _torch_in_bad_fork() -> bool:
    """torch's own flag: this process was forked after torch initialised CUDA."""
    torch = sys.modules.get("torch")
    check = getattr(getattr(torch, "cuda", None), "_is_in_bad_fork", None)
    return bool(check and check())


def _cuda():
    global _CUDA
    if _CUDA:
        return _CUDA
    if _FORKED_FROM_GPU or _torch_in_bad_fork():
        raise RuntimeError(FORKED)
    try:
        from numba import cuda
    except ImportError as e:  # pragma: no cover - numba always ships numba.cuda today
        raise RuntimeError('the GPU path needs numba-cuda: pip install "turbometrics[cuda]"') from e
    if not cuda.is_available():
        raise RuntimeError(
            "device='cuda' was asked for (or a GPU array was given) but no usable GPU was found "
            "(numba.cuda.is_available() is False)"
        )
    from numba import config

    if not config.ENABLE_CUDASIM:
        try:  # the kernels' lowering; numba-cuda 0.30.4 fails here on NumPy 2.5 (np.row_stack is gone)
            import numba.cuda.cudaimpl  # noqa: F401
        except AttributeError as e:
            if hasattr(np, "row_stack"):
                raise
            version = getattr(sys.modules.get("numba_cuda"), "__version__", "(version unknown)")
            raise RuntimeError(
                f"numba-cuda {version} cannot compile kernels with NumPy {np.__version__} ({e}); "
                "install a NumPy below 2.5 or a numba-cuda that supports it"
            ) from e
    from ._kernels import cuda as K

    _CUDA = (cuda, K)
    return _CUDA


def _numba(a: Any, hold: bool = True) -> Any:
    """numba's view of a torch or CuPy device array (holding ``a`` unless ``hold`` is False), with no wait on
    the stream a CuPy array names (numba's default for the v3 interface would make the host wait for the
    work that made it): our kernels and copies queue on the caller's stream, after that work."""
    return _cuda()[0].from_cuda_array_interface(a.__cuda_array_interface__, owner=a if hold else None, sync=False)


_VIEWS: dict = {}  # (device, address, shape, dtype) -> numba's view of a torch tensor, holding no reference to it


def _view(x: Any, shape: tuple, dtype: Any = None) -> Any:
    """numba's view of ``x``, a CUDA tensor, as a C-contiguous array of ``shape`` (of ``x``'s size), viewed as
    ``dtype`` (of ``x``'s item size) if given.

    numba builds one in about 35 us (H200); the caller's tensors (logits, targets) come back at the same
    address call after call, so views of a contiguous ``x`` are kept by address and layout, holding no
    reference (they never keep memory alive; torch frees on the stream's order), and a call that finds one
    makes no tensor either. The view of a contiguous copy (of a strided ``x``) holds the copy."""
    if not x.is_contiguous():
        return _numba(_reshaped(x, shape, dtype).contiguous())
    key = (x.device.index, x.data_ptr(), shape, x.dtype if dtype is None else dtype)
    v = _VIEWS.get(key)
    if v is None:
        if len(_VIEWS) >= 64:
            _VIEWS.clear()
        v = _VIEWS[key] = _numba(_reshaped(x, shape, dtype), hold=False)
    return v


def _reshaped(x: Any, shape: tuple, dtype: Any = None) -> Any:
    """``x`` detached (numba cannot view a tensor that requires grad), as ``shape``, viewed as ``dtype`` if given."""
    t = x.detach().reshape(shape)
    return t if dtype is None else t.view(dtype)


@dataclass
class Rows:
    """Scores on the device as (rows, classes), with what is needed to hand results back."""

    data: Any  # numba device array (R, C)
    widen: int  # _kernels.cuda.WIDEN_*
    lead: tuple  # the shape of the leading axes (targets' shape)
    kind: str  # "torch", "cupy", "numba" or "host"
    bf16: bool
    torch_host: bool = False  # host input that was a torch CPU tensor
    dtype: Any = None  # host input's element type (ml_dtypes bfloat16 results are viewed as it)
    torch_device: Any = None  # the tensor's device, for torch input
    stream: Any = 0  # where our kernels and copies queue: the caller's current stream (0: legacy default)
    span: int = 1  # elements per stored item: 2 for bf16 pairs read as 32-bit words

    @property
    def n_classes(self) -> int:
        return self.data.shape[1] * self.span


def device_rows(x: Any, name: str) -> Rows:
    """Validate a float (N, C) or (B, T, C) array and view it on the device as (rows, C)."""
    cuda, K = _cuda()
    if is_torch(x) and not (K.SIM and x.device.type == "cpu"):  # the simulator has no CUDA torch: host path
        import torch

        host_torch = x.device.type == "cpu"
        bf16 = x.dtype == torch.bfloat16
        _validate.check_torch_float(x, name)
        lead, c = _validate.check_rows_shape(x.shape, name)
        shape = (math.prod(lead), c)
        if host_torch:  # the copy on the GPU, held by its view
            t = _reshaped(x, shape, torch.int16 if bf16 else None).cuda()
            data, device = _numba(t.contiguous()), t.device
        else:
            data, device = _view(x, shape, torch.int16 if bf16 else None), x.device
        widen = K.WIDEN_BF16 if bf16 else K.WIDEN_F64 if x.dtype == torch.float64 else K.WIDEN_F32
        return Rows(
            data,
            widen,
            lead,
            "host" if host_torch else "torch",
            bf16,
            host_torch,
            torch_device=device,
            stream=_torch_stream(device),
        )
    if is_device_array(x):
        d = x if is_numba_device(x) else _numba(x)
        kind = "numba" if is_numba_device(x) else "cupy"
        dt = _validate.check_device_float(d.dtype, name)
        lead, c = _validate.check_rows_shape(d.shape, name)
        if not d.is_c_contiguous():
            raise ValueError(f"{name} must be C-contiguous on the GPU")
        stream = 0
        if kind == "cupy":
            import cupy

            stream = _stream(cupy.cuda.get_current_stream().ptr)
        return Rows(
            d.reshape(-1, c), K.WIDEN_F64 if dt == np.float64 else K.WIDEN_F32, lead, kind, False, stream=stream
        )
    a = _validate.as_array(x, name)  # host input with device="cuda"
    _validate.require_float(a, name)
    lead, c = _validate.check_rows_shape(a.data.shape, name)
    host = np.ascontiguousarray(a.data.reshape(-1, c))
    widen = K.WIDEN_BF16 if a.code == _validate.BF16 else K.WIDEN_F64 if a.code == _validate.F64 else K.WIDEN_F32
    data = cuda.to_device(host.view(np.float16) if a.code == _validate.F16 else host)
    return Rows(data, widen, lead, "host", a.code == _validate.BF16, a.torch, a.dtype)


_STREAMS: dict = {}  # stream handle -> numba's view of it


def _stream(ptr: int) -> Any:
    """numba's handle on a stream of torch or CuPy (0 stays the legacy default stream). Kernels queued there
    run after the work that made their input, also when the caller works on a stream of its own."""
    if not ptr:
        return 0
    if ptr not in _STREAMS:
        if len(_STREAMS) > 64:  # callers that make many streams: handles are cheap to remake
            _STREAMS.clear()
        _STREAMS[ptr] = _cuda()[0].external_stream(ptr)
    return _STREAMS[ptr]


def _torch_stream(device: Any) -> Any:
    """``_stream`` of torch's current stream on ``device`` (a CUDA torch.device), by the call Triton and Inductor
    make for it: ``torch.cuda.current_stream`` builds a Stream object first."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return _stream(raw(device.index) if raw is not None else torch.cuda.current_stream(device).cuda_stream)


RAW_COPY = os.environ.get("TURBOMETRICS_RAW_COPY", "1") != "0"  # _back in one driver call (0: numba's copy)
_DRIVER: list = []  # [cuda.bindings' driver module, or None], on first use


def _back(d: Any, stream: Any) -> np.ndarray:
    """A device array copied to the host after the work queued on ``stream``: contiguous ones on a GPU in one
    driver call (``_raw_back``), else numba's copy and a wait on the stream."""
    if RAW_COPY and not _kernels().SIM and d.is_c_contiguous():
        host = _raw_back(d, stream)
        if host is not None:
            return host
    out = d.copy_to_host(stream=stream)
    if not isinstance(stream, int):  # an async copy on the caller's stream: wait for it
        stream.synchronize()
    return out


def _raw_back(d: Any, stream: Any) -> np.ndarray | None:
    """``d`` on the host by ``cuMemcpyDtoHAsync`` on the caller's stream and a wait for that stream: two driver
    calls, where numba's copy and its wait took 44 us of an H100 host's time for a tally's 608 bytes
    (tools/gpu_overhead.py). (A copy into pageable memory usually returns when it is done, but the CUDA
    documentation no longer promises it: the wait stays.) None where the driver refused the copy (no current
    context on this thread, say): the caller copies numba's way."""
    if not _DRIVER:
        try:
            from cuda.bindings import driver
        except ImportError:
            driver = None
        _DRIVER.append(driver)
    driver = _DRIVER[0]
    host = np.empty(d.shape, d.dtype)
    if driver is None or not host.nbytes:
        return host if driver is not None else None
    try:
        handle = 0 if isinstance(stream, int) else int(stream.handle)
        (err,) = driver.cuMemcpyDtoHAsync(host.ctypes.data, d.device_ctypes_pointer.value, host.nbytes, handle)
    except Exception:  # noqa: BLE001 - bindings unlike these (another stream type, release): numba's copy
        return None
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    (err,) = driver.cuStreamSynchronize(handle)
    if err != driver.CUresult.CUDA_SUCCESS:  # a kernel before the copy failed: numba's copy reports it
        return None
    return host


def _tokens(tok: Any) -> tuple:
    """Token IDs on the device, the stream to queue on and the torch device (None for host input): a CUDA
    tensor in place, on torch's current stream (after the work that made it); host arrays (and CPU
    tensors, the simulator's) uploaded."""
    if is_torch(tok):
        if tok.device.type == "cuda":
            return _numba(tok.contiguous()), _torch_stream(tok.device), tok.device
        tok = tok.numpy()
    return _cuda()[0].to_device(np.ascontiguousarray(tok)), 0, None


def _put(host: np.ndarray, torch_device: Any, stream: Any, cupy: bool = False) -> Any:
    """A host array on the device: through the input's caching allocator (torch, CuPy; numba's cuMemAlloc
    and staged copy cost more than many of our kernels), else numba's."""
    host = np.ascontiguousarray(host)
    if torch_device is not None:
        import torch

        # From page-locked memory and non-blocking: torch's copy from pageable memory makes the host wait for
        # all the work queued on the stream (a model's forward pass); this one queues behind it (torch keeps
        # the page-locked block until the copy is done).
        return _numba(torch.from_numpy(host).pin_memory().to(torch_device, non_blocking=True))
    if cupy:
        import cupy as cp

        return _numba(cp.asarray(host))
    return _cuda()[0].to_device(host, stream=stream)


def _alloc(shape: Any, dtype: Any, torch_device: Any = None, stream: Any = 0, cupy: bool = False, zero: bool = False):
    """A device array (uninitialised, or zeros with ``zero``), from the input's own allocator where it has a
    caching one (torch, CuPy): numba's plain cuMemAlloc and staged copies cost 0.1 ms a call on an H100."""
    if torch_device is not None:
        import torch

        make = torch.zeros if zero else torch.empty
        return _numba(make(shape, dtype=_torch_dtypes()[np.dtype(dtype)], device=torch_device))
    if cupy:
        import cupy as cp

        return _numba((cp.zeros if zero else cp.empty)(shape, dtype))
    if zero:
        return _cuda()[0].to_device(np.zeros(shape, dtype), stream=stream)
    return _cuda()[0].device_array(shape, dtype, stream=stream)


def _threads(width: int, most: int) -> int:
    """Threads a block for ``width`` parallel items: whole warps, at most ``most`` (and TPB)."""
    return min(most, _kernels().TPB, max(32, -(-width // 32) * 32))


def _empty(rows: Rows, shape: tuple, dtype: Any):
    """``_alloc`` beside ``rows``."""
    return _alloc(shape, dtype, rows.torch_device, rows.stream, rows.kind == "cupy")


def _upload(rows: Rows, host: np.ndarray):
    """``_put`` beside ``rows``."""
    return _put(host, rows.torch_device, rows.stream, rows.kind == "cupy")


@dataclass
class Targets:
    """Targets as the row kernels take them: ``args`` = (targets, mask, use_mask, ignore, use_ignore).

    Device targets (int32/int64, the scores' leading shape) and a device bool mask
    go to the kernel as they are, checked there: no host round trip. Anything else
    is validated on the host (``_validate.as_targets``) and uploaded, with -1 where
    not counted; ``counted`` is then known before the kernel runs.
    """

    args: tuple
    counted: np.ndarray | None
    source: tuple  # (targets, ignore_index, mask) as given: re-checked on the host when a kernel flags one

    def counted_from(self, status: np.ndarray, lead: tuple, n_classes: int) -> np.ndarray:
        """The counted mask (shaped ``lead``) from the kernel's per-row status (the host's own if it validated)."""
        if self.counted is not None:
            return self.counted
        if status.max(initial=0) == _kernels().OUT_OF_RANGE:
            self.out_of_range(lead, n_classes)
        return (status == _kernels().COUNTED).reshape(lead)

    def out_of_range(self, lead: tuple, n_classes: int) -> NoReturn:
        """Raise the CPU path's error for the counted target outside [0, n_classes) that a kernel found."""
        targets, ignore_index, mask = self.source  # the host check raises the CPU path's error
        _validate.as_targets(
            to_host(targets),
            lead,
            n_classes,
            ignore_index=ignore_index,
            mask=None if mask is None else to_host(mask),
        )
        raise ValueError(  # a pending update's targets, changed by the caller before they were read back
            f"targets: a GPU kernel found a counted target outside [0, {n_classes}), which the targets "
            "no longer hold (were they changed after the call?)"
        )


def _kernels():
    return _cuda()[1]


def _flat_on_device(x: Any, rows: Rows, dtypes: tuple):
    """``x`` as a flat numba device array (bool viewed as uint8) when it lives on the scores' device with their
    leading shape and one of ``dtypes``; None sends it through the host's validation."""
    if x is None or not is_device_array(x):
        return None
    if is_torch(x):
        if x.device != rows.torch_device or tuple(x.shape) != rows.lead or str(x.dtype)[6:] not in dtypes:
            return None
        import torch

        return _view(x, (x.numel(),), torch.uint8 if x.dtype == torch.bool else None)
    if rows.torch_device is not None:
        return None
    d = x if is_numba_device(x) else _numba(x)
    if tuple(d.shape) != rows.lead or d.dtype.name not in dtypes or not d.is_c_contiguous():
        return None
    d = d.reshape(-1)
    return d.view(np.uint8) if d.dtype == np.bool_ else d


def device_targets(rows: Rows, targets: Any, ignore_index, mask, spare) -> Targets:
    """Targets (and mask) for a row kernel; ``spare`` (any uint8 device array) stands in for a missing mask."""
    ignore = None if ignore_index is None else _validate.check_int(ignore_index, "ignore_index")
    if ignore is not None and not -(2**63) <= ignore < 2**63:  # no int32/int64 target can equal it
        ignore = None
    t = _flat_on_device(targets, rows, ("int64", "int32"))
    m = None if mask is None else _flat_on_device(mask, rows, ("bool",))
    if t is not None and m is None and mask is not None and not is_device_array(mask):  # a host mask goes up:
        m = _upload(rows, _validate.as_mask(mask, rows.lead).reshape(-1).view(np.uint8))  # device targets stay
    if t is not None and (mask is None or m is not None):
        return Targets(
            (t, spare if m is None else m, m is not None, 0 if ignore is None else ignore, ignore is not None),
            None,
            (targets, ignore_index, mask),
        )
    t64, counted = _validate.as_targets(
        to_host(targets),
        rows.lead,
        rows.n_classes,
        ignore_index=ignore_index,
        mask=None if mask is None else to_host(mask),
    )
    return Targets((_upload(rows, t64), spare, False, -1, True), counted, (targets, ignore_index, mask))


KEEP_MAX = 16 << 20  # bytes of scratch one kind of call may keep for the next (``_kept``)
KEEP_TOTAL = 64 << 20  # bytes kept in all; past it, everything kept is let go
_SCRATCH: dict = {}  # (thread, device, kind, stream, what) -> (device buffers (and views), bytes) kept for reuse


def _kept(rows: Rows, what: tuple, nbytes: int, make: Callable) -> Any:
    """``make()``'s buffers (``nbytes`` in all), kept and handed to this thread's next call on the same device
    and stream that asks for ``what``, when at most ``KEEP_MAX``: for buffers whose contents never outlive a
    call (scratch, results copied to the host). Making them (an allocation, numba's view of it, slices) costs
    more host time than the rest of a call. Reuse is safe in the stream's order: the next kernel writes after
    this call's copy to the host was queued; one stream used from two threads gets buffers for each."""
    if nbytes > KEEP_MAX:
        return make()
    if rows.torch_device is not None:
        device = rows.torch_device.index
    else:  # CuPy, numba, host input: the current device (the simulator's has no id)
        device = getattr(_cuda()[0].get_current_device(), "id", 0)
    key = (threading.get_ident(), device, rows.kind, rows.stream, what)
    got = _SCRATCH.get(key)
    if got is None:
        if sum(b for _, b in _SCRATCH.values()) + nbytes > KEEP_TOTAL:
            _SCRATCH.clear()  # (torch and CuPy reuse freed memory in stream order; numba frees wait for the GPU)
        got = _SCRATCH[key] = (make(), nbytes)
    return got[0]


def _with_status(rows: Rows, dtype: Any, scratch: bool = False) -> tuple:
    """(buffer, values, status): a value of ``dtype`` then a status byte per row in one device
    buffer, so that both come back in one copy; with ``scratch`` (results that only go on to the
    host) kept for reuse (``_kept``)."""
    n = rows.data.shape[0]

    def make() -> tuple:
        buf = _empty(rows, n + (n + 7) // 8, dtype)
        return buf, buf[:n], buf[n:].view(np.uint8)[:n]

    nbytes = (n + (n + 7) // 8) * np.dtype(dtype).itemsize
    return _kept(rows, ("status", n, np.dtype(dtype).str), nbytes, make) if scratch else make()


def give_back(d: Any, rows: Rows, shape: tuple, bf16_values: bool = False):
    """A device result in the caller's type: torch tensor, CuPy array, Numba array, or host ndarray/tensor."""
    d = d.reshape(shape)
    if rows.kind == "torch":
        import torch

        out = torch.as_tensor(d, device=rows.torch_device)
        return out.view(torch.bfloat16) if bf16_values else out
    if rows.kind == "cupy":
        import cupy

        return cupy.asarray(d)
    if rows.kind == "numba":
        return d
    host = _back(d, rows.stream)
    if rows.torch_host:
        import torch

        out = torch.from_numpy(host.view(np.int16) if bf16_values else host)
        return out.view(torch.bfloat16) if bf16_values else out
    return host.view(rows.dtype) if bf16_values else host


def _launch_rows(name: str, rows: Rows, *args) -> None:
    """Row kernel ``name`` (its factory's name in ``_kernels.cuda``) with a warp per short row or a block per
    long one."""
    _, K = _cuda()
    n, c = rows.data.shape[0], rows.n_classes
    group = 32 if c <= WARP_ROW_MAX_V else K.TPB
    per_block = K.TPB // group
    grid = (n + per_block - 1) // per_block
    _launch.launch(getattr(K, name)(rows.widen, group), grid, K.TPB, rows.stream, (rows.data, *args), _direct(rows))


def _direct(rows: Rows) -> int | None:
    """The index of the GPU that torch input lives on when it is the current one: a direct launch's device
    (``_launch``); else None, numba's launch (which asks the driver for the current context)."""
    if rows.torch_device is None:
        return None
    import torch

    i = rows.torch_device.index
    return i if i == torch.cuda.current_device() else None


def row_job(name: str, rows: Rows, targets: Any, ignore_index, mask, dtype, *options, scratch=False) -> tuple:
    """Row kernel ``name``'s buffers (``_with_status``), its targets and its launch, apart from the call so
    that benchmarks can time the kernel alone: (buf, values, status, Targets, launch)."""
    buf, out, status = _with_status(rows, dtype, scratch)
    tg = device_targets(rows, targets, ignore_index, mask, status)

    def launch() -> None:
        if len(out):
            _launch_rows(name, rows, *tg.args, *options, out, status)

    return buf, out, status, tg, launch


def _row_results(name: str, rows: Rows, targets: Any, ignore_index, mask, dtype, host: bool, *options):
    """Run row kernel ``name`` with its targets; (values on the device, or on the host if ``host``; counted mask)."""
    buf, out, status, tg, launch = row_job(name, rows, targets, ignore_index, mask, dtype, *options, scratch=host)
    launch()
    n = len(out)
    if host:
        h = _back(buf, rows.stream)
        return h[:n], tg.counted_from(h[n:].view(np.uint8)[:n], rows.lead, rows.n_classes)
    status_host = _back(status, rows.stream) if tg.counted is None else None
    return out, tg.counted_from(status_host, rows.lead, rows.n_classes)


_PINNED: dict = {}  # bytes -> numba page-locked blocks that finished chunks gave back (a few, for reuse)


def _pinned(shape: Any, dtype: Any, rows: Rows) -> tuple:
    """(host ndarray in page-locked memory, its owner, whether the owner goes back to ``_PINNED``): from
    torch's or CuPy's pool for their input, else numba's blocks, kept for reuse: freeing page-locked memory
    (cudaFreeHost) synchronises the device."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if rows.torch_device is not None:
        import torch

        t = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        return t.numpy().view(dtype).reshape(shape), t, False
    if rows.kind == "cupy":
        import cupyx

        a = cupyx.empty_pinned(shape, dtype)
        return a, a, False
    try:
        block = _PINNED.get(nbytes, []).pop()
    except IndexError:
        block = _cuda()[0].pinned_array(nbytes, np.uint8)
    return block.view(dtype).reshape(shape), block, True


def _reuse_pinned(block: np.ndarray) -> None:
    if sum(len(v) for v in _PINNED.values()) < 16:
        _PINNED.setdefault(block.nbytes, []).append(block)


class Later(EventPending):
    """A row kernel's values and statuses on their way to the host, for a metric's ``update`` on device input:
    the copy is queued on the caller's stream (after the kernel) into page-locked memory, with an event after
    it, so ``update`` returns at once; ``chunk()`` waits for the event and then does what the synchronous path
    does with the host copy (``Targets.counted_from``, then ``finish(values, counted)``)."""

    def __init__(self, buf: Any, n: int, rows: Rows, tg: Targets, finish: Callable):
        # Kept for later: no device array (a pending update must not hold the input, or a contiguous copy
        # of it, alive); the targets and mask as given, for the host's error message.
        self.n, self.lead, self.n_classes, self.finish = n, rows.lead, rows.n_classes, finish
        self.tg = replace(tg, args=())
        self.host, self._owner, self._reusable = _pinned(buf.shape, buf.dtype, rows)
        cuda, K = _cuda()
        # A stream object even for the legacy default stream: numba copies synchronously on stream 0
        stream = rows.stream or cuda.default_stream()
        buf.copy_to_host(self.host, stream=stream)
        event = cuda.event() if K.SIM else cuda.event(timing=False)  # (no timing: a cheaper event)
        event.record(stream)
        super().__init__(event)

    def chunk(self) -> tuple:
        self.wait()
        n, h = self.n, self.host
        counted = self.tg.counted_from(h[n:].view(np.uint8)[:n], self.lead, self.n_classes)
        values = h[:n].copy()  # off the page-locked block, which goes back to its pool
        if self._reusable:
            _reuse_pinned(self._owner)
        self.host = self._owner = None
        return self.finish(values.reshape(self.lead), counted)

    def __del__(self) -> None:
        # Dropped unread (a reset, an error): the copy may still be writing into the page-locked block, which
        # its pool would hand out again once it is freed. Not in a forked child: its parent's context is not
        # usable there (and the block is the parent's).
        if getattr(self, "event", None) is None or os.getpid() != self.pid or _FORKED_FROM_GPU:  # (None: a failed init)
            return
        try:
            self.event.synchronize()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone: nothing left to protect
            pass


def row_later(name: str, rows: Rows, targets: Any, ignore_index, mask, dtype, finish: Callable, *options) -> Later:
    """Run row kernel ``name`` and queue its results' copy to the host: a ``Later`` that ends in
    ``finish(values shaped like the targets, counted mask)``."""
    buf, out, _, tg, launch = row_job(name, rows, targets, ignore_index, mask, dtype, *options, scratch=True)
    launch()
    return Later(buf, len(out), rows, tg, finish)


def _as_pairs(rows: Rows) -> Rows:
    """bf16 rows of even length on a 4-byte boundary as 32-bit words (``nll_rows`` reads two elements a
    load: twice the bytes in flight per thread); other rows as they are."""
    _, K = _cuda()
    if rows.widen != K.WIDEN_BF16 or rows.data.shape[1] % 2:
        return rows
    # Kept on the view it is made from (cached by _view), and gone with it: numba makes a view in microseconds,
    # a call's host budget
    pairs = rows.data.__dict__.get("_tm_pairs")
    if pairs is None:
        cai = getattr(rows.data, "__cuda_array_interface__", None)  # the simulator's arrays have none
        if cai is not None and cai["data"][0] % 4:
            return rows
        pairs = rows.data.__dict__["_tm_pairs"] = rows.data.view(np.int32)
    r = rows  # made directly: dataclasses.replace took 1.3 us here, this 0.24 (Intel Xeon, 2 cores)
    return Rows(pairs, K.WIDEN_BF16_PAIRS, r.lead, r.kind, r.bf16, r.torch_host, r.dtype, r.torch_device, r.stream, 2)


@on_input_device
def nll(logits: Any, targets: Any, ignore_index, mask, host: bool = False):
    """Per-row NLL (float64, 0 where not counted; on the host if ``host``), the counted mask, the rows."""
    rows = _as_pairs(device_rows(logits, "logits"))
    out, counted = _row_results("nll_rows", rows, targets, ignore_index, mask, np.float64, host)
    return out, counted, rows


@on_input_device
def nll_later(logits: Any, targets: Any, ignore_index, mask, finish: Callable) -> Later:
    """``nll``'s per-row NLL and counted mask as a ``Later`` that ends in ``finish(nll, counted)``."""
    rows = _as_pairs(device_rows(logits, "logits"))
    return row_later("nll_rows", rows, targets, ignore_index, mask, np.float64, finish)


@on_input_device
def ranks(scores: Any, targets: Any, before: bool, after: bool, ignore_index, host: bool = False):
    """int64 ranks (-1 where not counted; on the host if ``host``), the counted mask, the rows."""
    rows = device_rows(scores, "scores")
    out, counted = _row_results("rank_rows", rows, targets, ignore_index, None, np.int64, host, before, after)
    return out, counted, rows


def topk_job(x: Any, k: Any, largest: bool) -> tuple:
    """Top-k's validated rows, output buffers and one launch (apart, for benchmarks): (rows, vals, idx, launch)."""
    _, K = _cuda()
    rows = device_rows(x, "x")
    if rows.widen == K.WIDEN_F64:
        raise TypeError("x: float64 top-k is not supported on the GPU; use device='cpu'")
    n, c = rows.data.shape
    k = _validate.check_k(k, c)
    if c >= 1 << 31:
        raise ValueError(f"x has {c} columns; the GPU top-k indexes rows with 32-bit integers")
    vals = _empty(rows, (n, k), rows.data.dtype)
    idx = _empty(rows, (n, k), np.int64)

    def scratch() -> tuple:  # for the radix-select path; kept for the next call when small
        return _empty(rows, n * k, np.int64), _empty(rows, n * k, np.int64)

    cand_key, cand_idx = _kept(rows, ("topk", n * k), 16 * n * k, scratch)

    def launch() -> None:
        if n:
            args = (rows.data, k, bool(largest), vals, idx, cand_key, cand_idx)
            _launch.launch(K.topk_rows(rows.widen), n, K.TPB, rows.stream, args, _direct(rows))

    return rows, vals, idx, launch


@on_input_device
def topk(x: Any, k: Any, largest: bool):
    """Top-k values and indices per row on the device (last axis only)."""
    rows, vals, idx, launch = topk_job(x, k, largest)
    launch()
    shape = rows.lead + (vals.shape[1],)
    return give_back(vals, rows, shape, bf16_values=rows.bf16), give_back(idx, rows, shape)


@on_input_device
def lcs(a: Any, a_start: np.ndarray, a_end: np.ndarray, b: Any, b_start: np.ndarray, b_end: np.ndarray) -> np.ndarray:
    """LCS length of each pair (a[a_start[p]:a_end[p]], b[b_start[p]:b_end[p]]) on the GPU: validated
    tokens of one dtype (host arrays or CUDA tensors; ``b`` may be ``a``: the kernel swaps the sides, so
    both must have the same type), host spans in; int64 lengths back on the host."""
    _, K = _cuda()
    n = len(a_start)
    if n == 0:
        return np.zeros(0, np.int64)
    da, stream, dev = _tokens(a)
    db = da if b is a else _tokens(b)[0]
    side = np.minimum(np.asarray(a_end) - a_start, np.asarray(b_end) - b_start)  # the wavefront's columns
    widest = int(side.max())
    if widest <= K.LCS_SHARED_MAX:  # three diagonals of int32 in shared memory (lcs_launch)
        scratch_off, scratch = np.zeros(n, np.int64), _alloc(0, np.int32, dev, stream)
    else:
        scratch_off = np.concatenate([[0], np.cumsum(3 * (side + 1))])
        scratch = _alloc(int(scratch_off[-1]), np.int32, dev, stream)
    spans = _put(np.concatenate([a_start, a_end, b_start, b_end, scratch_off[:n]]).astype(np.int64), dev, stream)
    out = _alloc(n, np.int64, dev, stream)
    lcs_launch(da, db, spans, scratch, out, n, widest, stream)
    return _back(out, stream)


def lcs_launch(da, db, d_spans, scratch, out, n: int, widest: int, stream) -> None:
    """Queue the LCS kernel for ``n`` pairs on ``stream``: ``d_spans`` as ``lcs`` lays them out, ``widest`` at least
    every pair's shorter side (exact on the host path, the padded width where the lengths stay on the device);
    three diagonals of it in shared memory up to LCS_SHARED_MAX, else in ``scratch`` at the spans' offsets."""
    K = _kernels()
    shared = 12 * (widest + 1) if widest <= K.LCS_SHARED_MAX else 0
    K.lcs_pairs[n, _threads(widest, K.TPB), stream, shared](da, db, d_spans, scratch, out)


@on_input_device
def ngram_matches(
    tok: Any, off: np.ndarray, hyp: np.ndarray, ref_seq: np.ndarray, seg: np.ndarray, order: int, per_ref: bool
) -> np.ndarray:
    """Clipped n-gram matches of token-ID segments on the GPU (``_kernels.cuda.ngram_matches``): int64
    tokens (a host array, or a CUDA tensor used in place) and host indices from ``text.token_ids.joined``
    in, int64 (segments, order) back, or (references, order) with ``per_ref``. Only counts cross back;
    the scores are made on the host by the CPU path's formulas."""
    _, K = _cuda()
    if not 1 <= order <= K.MAX_GPU_ORDER:  # the kernel counts orders in fixed per-thread arrays
        raise ValueError(f"the GPU n-gram kernel counts orders 1..{K.MAX_GPU_ORDER}, got {order}")
    shape = (len(ref_seq) if per_ref else len(hyp), order)
    if not (len(hyp) and len(tok)):
        return np.zeros(shape, np.int64)
    d_tok, stream, dev = _tokens(tok)
    meta = np.concatenate([off, hyp, ref_seq, seg]).astype(np.int64)  # one upload (see the kernel)
    lens = np.diff(off)
    ref_sum = np.concatenate([[0], np.cumsum(lens[ref_seq])])
    widest = int((lens[hyp] + ref_sum[seg[1:]] - ref_sum[seg[:-1]]).max())  # a segment's tokens, all sides
    out = _alloc(shape, np.int64, dev, stream, zero=True)
    layout = (len(off), len(hyp), len(ref_seq))
    ngram_launch(d_tok, _put(meta, dev, stream), layout, widest, int(lens[hyp].max()), order, per_ref, out, stream)
    return _back(out, stream)


def ngram_launch(d_tok, d_meta, layout: tuple, widest: int, longest: int, order: int, per_ref: bool, out, stream):
    """Queue the n-gram kernel on ``stream``: ``d_meta`` laid out as ``ngram_matches``' (``layout``: how many
    offsets, hypotheses and references it holds), ``widest`` and ``longest`` at least a segment's tokens (all
    sides) and a hypothesis's: exact on the host path, the padded widths where the lengths stay on the device."""
    K = _kernels()
    n_off, n_hyp, n_ref = layout
    staged = widest <= K.NGRAM_SHARED_MAX
    threads = _threads(longest, NGRAM_THREADS)
    parts = max(1, min(-(-longest // threads), -(-NGRAM_BLOCKS // n_hyp)))  # blocks a segment: a thread a position
    K.ngram_matches[(n_hyp, parts), threads, stream, 8 * widest if staged else 0](
        d_tok, d_meta, n_off, n_off + n_hyp, n_off + n_hyp + n_ref, order, per_ref, staged, out
    )
