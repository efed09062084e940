"""The GPU host path without a GPU. The direct kernel launch (``turbometrics._launch``): its argument flattening
against numba-cuda's own (``_Kernel._prepare_args``) on device arrays over stand-in memory, and when it launches
directly, learns, or leaves the launch to numba; the one-call copy back (``_gpu._raw_back``). The launches and
copies themselves are checked on a GPU (tests/gpu/test_kernels.py)."""

import contextlib
import ctypes

import numpy as np
import pytest

pytestmark = pytest.mark.gpu  # numba.cuda's host side, no GPU needed

cuda_devicearray = pytest.importorskip("numba.cuda.cudadrv.devicearray")
from numba.cuda.cudadrv import devices  # noqa: E402
from numba.cuda.dispatcher import _Kernel  # noqa: E402
from numba.cuda.typing.typeof import Purpose, typeof  # noqa: E402

from turbometrics import _launch  # noqa: E402


class Memory:
    """Device memory as numba's arrays use it (a pointer, views of it), at an address no one reads."""

    def __init__(self, ptr: int, size: int):
        self.ptr, self.size = ptr, size

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_void_p(self.ptr)

    def view(self, start, stop=None):
        return Memory(self.ptr + start, (self.size if stop is None else stop) - start)


@pytest.fixture(autouse=True)
def no_driver(monkeypatch):
    """numba's slicing asks for a context; none is needed to describe memory."""
    monkeypatch.setattr(devices._runtime, "ensure_context", lambda: contextlib.nullcontext(), raising=False)
    _launch.clear()
    yield
    _launch.clear()


def device_array(shape, dtype, ptr=1 << 40):
    dt = np.dtype(dtype)
    strides = np.empty(shape, dt).strides
    return cuda_devicearray.DeviceNDArray(shape, strides, dt, gpu_data=Memory(ptr, int(np.prod(shape)) * dt.itemsize))


def numba_flat(args):
    class Kernel:
        extensions: list = []

    out: list = []
    for a in args:
        _Kernel._prepare_args(Kernel(), typeof(a, Purpose.argument), a, 0, [], out)
    return out


def converters(args):
    return tuple(_launch._converter(typeof(a, Purpose.argument)) for a in args)


def row_kernel_args():
    """A row kernel's arguments as ``_gpu`` makes them: bf16 logits read as int32 pairs, int64 targets, one
    buffer holding float64 values then status bytes."""
    n = 4096
    buf = device_array((n + n // 8,), np.float64, 1 << 41)
    out, status = buf[:n], buf[n:].view(np.uint8)[:n]
    x = device_array((n, 128256), np.int16).view(np.int32)
    t = device_array((n,), np.int64, 1 << 42)
    return (x, t, status, False, 0, True, out, status)


def test_flattening_is_numbas():
    two_d = device_array((6, 10), np.float32)
    cases = [
        row_kernel_args(),
        (two_d, two_d[1:4], two_d[:, 2:5], two_d[:, ::2]),  # C-contiguous, a row range, strided ('A') views
        (device_array((1,), np.int64), device_array((1, 1), np.float64), device_array((3, 1), np.float16)),
        (device_array((), np.float32),),  # 0-d
        (7, -(2**63), np.int64(5), np.int32(-3), np.uint8(200), True, np.bool_(False), 2.5, np.float32(1.5)),
    ]
    for args in cases:
        convert = converters(args)
        assert None not in convert
        ours, theirs = _launch.flatten(convert, args), numba_flat(args)
        assert _launch._same(ours, theirs), (ours, theirs)
        assert _launch._same(_launch.flatten(convert, args), theirs)  # again, from what each array kept
        # the same bytes: each argument as cuda.core packs it (ints and bools as numba passes them)
        assert [type(v) for v in ours] == [type(v) for v in theirs]


def test_same_compares_ctypes_by_value():
    assert _launch._same([ctypes.c_int64(3), 1, True], [ctypes.c_int64(3), 1, True])
    assert not _launch._same([ctypes.c_int64(3)], [ctypes.c_int32(3)])
    assert not _launch._same([ctypes.c_int64(3)], [ctypes.c_int64(4)])
    assert not _launch._same([1, 2], [1])


def test_marks_follow_numbas_typing():
    x = row_kernel_args()[0]
    assert _launch._mark(x) == str(typeof(x, Purpose.argument))
    two_d = device_array((6, 10), np.float32)
    arrays = [x, two_d, two_d[1:4], two_d[:, 2:5], two_d[:, ::2], device_array((3,), np.int64), two_d.reshape(60)]
    numba_type = {id(a): typeof(a, Purpose.argument) for a in arrays}
    for a in arrays:  # the same mark exactly where numba types the same
        for b in arrays:
            assert (_launch._mark(a) == _launch._mark(b)) == (numba_type[id(a)] == numba_type[id(b)])
        assert _launch._mark(a) is _launch._mark(a)  # kept on the array
    assert _launch._mark(True) is bool and _launch._mark(3) is int and _launch._mark(np.int32(3)) is np.int32
    # left to numba: ints its C dispatcher and its Python typing type differently, arrays it views or copies
    for other in (2**63, -(2**63) - 1, 2**64, np.zeros(3), [1, 2], None):
        assert _launch._mark(other) is _launch._OTHER
    assert _launch._converter(typeof(1j, Purpose.argument)) is None  # not handled here: numba's path


def test_streams_are_numbas():
    from numba.cuda.cudadrv import driver

    assert _launch._stream(0).handle == driver._to_core_stream(0).handle
    assert _launch._stream(0) is _launch._stream(0)  # made once a handle
    for handle in (12345, 0):  # a stream of torch's or CuPy's as numba sees it (an external stream), the default
        s = driver.Stream(driver.binding.CUstream(handle), external=True)
        assert int(_launch._stream(s).handle) == int(driver._to_core_stream(s).handle) == handle


class Dispatcher:
    """numba's dispatcher as ``_launch`` uses it: ``[grid, block, stream, shared](*args)``, its overloads by
    argument types, and a loaded function per overload."""

    extensions = None

    def __init__(self):
        self.launched: list = []
        self.overloads: dict = {}

    def typeof_pyval(self, a):
        return typeof(a, Purpose.argument)

    def __getitem__(self, config):
        def run(*args):
            self.launched.append((config, args))
            types_ = tuple(self.typeof_pyval(a) for a in args)
            self.overloads.setdefault(types_, Overload())

        return run


class Overload:
    debug = False
    extensions: list = []

    def __init__(self):
        self.function = object()
        self._codelibrary = self

    def get_cufunc(self):
        return self

    @property
    def kernel(self):
        return self.function

    def _prepare_args(self, ty, val, stream, retr, out):
        _Kernel._prepare_args(self, ty, val, stream, retr, out)


@pytest.fixture
def direct(monkeypatch):
    """Launches through a stand-in cuda.core (recorded), on device 0."""
    import cuda.core

    launched: list = []
    monkeypatch.setattr(cuda.core, "launch", lambda stream, config, kernel, *a: launched.append((kernel, a)))
    monkeypatch.setattr(_launch, "_stream", lambda s: s)
    monkeypatch.setattr(devices, "get_context", lambda: type("C", (), {"device": type("D", (), {"id": 0})})())
    monkeypatch.setattr(_launch, "DIRECT", True)
    return launched


def test_first_launch_is_numbas_then_direct(direct):
    d, args = Dispatcher(), row_kernel_args()
    _launch.launch(d, 512, 256, 0, args, device=0)
    assert len(d.launched) == 1 and not direct  # numba compiled and loaded it
    for _ in range(2):
        _launch.launch(d, 512, 256, 0, args, device=0)
    assert len(d.launched) == 1 and len(direct) == 2
    kernel, flat = direct[-1]
    (overload,) = d.overloads.values()
    assert kernel is overload.function
    assert _launch._same(list(flat), numba_flat(args))
    # other argument types are another kind: numba first again
    other = (*args[:4], np.int32(0), *args[5:])  # ignore_index typed int32
    _launch.launch(d, 512, 256, 0, other, device=0)
    assert len(d.launched) == 2


def test_numbas_path_where_direct_cannot_be_trusted(direct, monkeypatch):
    args = row_kernel_args()
    d = Dispatcher()
    _launch.launch(d, 1, 256, 0, args)  # no device given (not torch input)
    _launch.launch(d, 1, 256, 0, args)
    assert len(d.launched) == 2 and not direct

    d = Dispatcher()
    _launch.launch(d, 1, 256, 0, args, device=1)  # numba's current device is not the input's
    _launch.launch(d, 1, 256, 0, args, device=1)
    assert len(d.launched) == 2 and not direct

    d = Dispatcher()  # a numba-cuda whose layout differs from ours: learned as "numba's path"
    monkeypatch.setattr(_launch, "_array_args", lambda a, out: out.extend((0, 0, a.size)))
    for _ in range(3):
        _launch.launch(d, 1, 256, 0, args, device=0)
    assert len(d.launched) == 3 and not direct


def test_kinds_numba_must_handle_are_never_learned(direct, monkeypatch):
    args = row_kernel_args()
    for odd in (np.zeros(4096), 2**63):  # a host array (numba copies it), an int typed apart by numba
        d = Dispatcher()
        for _ in range(2):
            _launch.launch(d, 1, 256, 0, (*args[:6], odd, args[7]), device=0)
        assert len(d.launched) == 2 and not direct and not _launch._KINDS

    for flag in ("cooperative", "debug"):  # launched with flags of their own
        d = Dispatcher()
        _launch.launch(d, 1, 256, 0, args, device=0)
        _launch.clear()
        for overload in d.overloads.values():
            setattr(overload, flag, True)
        for _ in range(2):
            _launch.launch(d, 1, 256, 0, args, device=0)
        assert len(d.launched) == 3 and not direct

    def broken(*a):
        raise AttributeError("numba-cuda moved something")

    monkeypatch.setattr(_launch, "_learn", broken)  # learning fails: numba's path, no error, not retried
    d = Dispatcher()
    for _ in range(2):
        _launch.launch(d, 1, 256, 0, args, device=0)
    assert len(d.launched) == 2 and not direct and None in _launch._KINDS.values()


def test_switch_off(direct, monkeypatch):
    monkeypatch.setattr(_launch, "DIRECT", False)
    d, args = Dispatcher(), row_kernel_args()
    for _ in range(3):
        _launch.launch(d, 1, 256, 0, args, device=0)
    assert len(d.launched) == 3 and not direct


def test_show_config_names_the_switches(monkeypatch):
    import turbometrics as tm

    gpu = tm.show_config(mode="dicts")["GPU"]
    assert gpu["direct launches"] == ("on" if _launch.DIRECT else "off")
    monkeypatch.setattr(_launch, "DIRECT", False)
    monkeypatch.setenv("TURBOMETRICS_KERNEL_CACHE", "0")
    gpu = tm.show_config(mode="dicts")["GPU"]
    assert gpu["direct launches"] == "off" and gpu["compiled-kernel cache"] == "off"


def test_copy_back_is_one_driver_call(monkeypatch):
    """``_gpu._raw_back``: a device array to the host by one cuMemcpyDtoHAsync on the caller's stream (a stand-in
    driver here, copying from host memory posing as the device's); None, numba's copy then, where the driver
    refuses or its bindings differ."""
    from turbometrics import _gpu

    src = np.arange(76, dtype=np.int64) * 3
    calls: list = []

    class Driver:
        class CUresult:
            CUDA_SUCCESS = 0

        error = 0

        @classmethod
        def cuMemcpyDtoHAsync(cls, dst, src_ptr, nbytes, stream):
            calls.append((nbytes, stream))
            ctypes.memmove(dst, src_ptr, nbytes)
            return (cls.error,)

        @staticmethod
        def cuStreamSynchronize(stream):
            calls.append(("wait", stream))
            return (0,)

    monkeypatch.setattr(_gpu, "_DRIVER", [Driver])

    def on_device(a):
        return cuda_devicearray.DeviceNDArray(a.shape, a.strides, a.dtype, gpu_data=Memory(a.ctypes.data, a.nbytes))

    d = on_device(src)
    np.testing.assert_array_equal(_gpu._raw_back(d, 0), src)
    stream = type("Stream", (), {"handle": 1234})()
    np.testing.assert_array_equal(_gpu._raw_back(on_device(src[10:20]), stream), src[10:20])
    assert calls == [(608, 0), ("wait", 0), (80, 1234), ("wait", 1234)]  # each copy, then its stream waited for
    empty = type("Empty", (), {"shape": (0,), "dtype": np.dtype(np.int64)})()  # (numba's asks for a context)
    assert _gpu._raw_back(empty, 0).shape == (0,) and len(calls) == 4  # nothing to copy: no call
    Driver.error = 201  # CUDA_ERROR_INVALID_CONTEXT: no context current on this thread
    assert _gpu._raw_back(d, 0) is None
    Driver.error = 0
    Driver.cuStreamSynchronize = staticmethod(lambda stream: (calls.append(("wait", stream)) or 700,))  # a fault
    assert _gpu._raw_back(d, 0) is None and calls[-1] == ("wait", 0)  # (numba's copy then reports it)
    assert _gpu._raw_back(d, object()) is None  # a stream without a handle: numba's copy
    monkeypatch.setattr(_gpu, "_DRIVER", [None])  # no cuda.bindings
    assert _gpu._raw_back(d, 0) is None


def test_back_copies_numbas_way_where_the_one_call_cannot(monkeypatch):
    """``_gpu._back``: the one-call copy for contiguous arrays on a GPU (not the simulator), numba's copy (and a
    wait on a stream object) where it returned None, for other arrays, and with ``RAW_COPY`` off."""
    from turbometrics import _gpu

    monkeypatch.setattr(_gpu, "_kernels", lambda: type("K", (), {"SIM": False}))
    raw: list = []
    monkeypatch.setattr(_gpu, "_raw_back", lambda d, stream: raw.append(d) or d.raw)

    class D:
        def __init__(self, raw, contiguous=True):
            self.raw, self.contiguous = raw, contiguous

        def is_c_contiguous(self):
            return self.contiguous

        def copy_to_host(self, stream):
            return "numba's copy"

    class Stream:
        waited = 0

        def synchronize(self):
            Stream.waited += 1

    assert _gpu._back(D("one call"), 0) == "one call" and len(raw) == 1
    assert _gpu._back(D(None), Stream()) == "numba's copy" and len(raw) == 2 and Stream.waited == 1
    assert _gpu._back(D("one call", contiguous=False), 0) == "numba's copy" and len(raw) == 2
    monkeypatch.setattr(_gpu, "RAW_COPY", False)
    assert _gpu._back(D("one call"), 0) == "numba's copy" and len(raw) == 2


def test_tensor_views_are_kept_by_address_and_layout(monkeypatch):
    """``_gpu._view`` with CPU tensors standing in for CUDA ones and a stand-in numba view: a contiguous tensor's
    view is made once (from the tensor reshaped and viewed as asked, holding no reference) and found again
    without a tensor made; other shapes, dtypes or addresses are views of their own; a strided tensor's view is
    of a contiguous copy, which it holds."""
    torch = pytest.importorskip("torch")
    from turbometrics import _gpu

    made: list = []

    class View:
        def __init__(self, t, hold):
            self.ptr, self.shape, self.dtype, self.hold = t.data_ptr(), tuple(t.shape), t.dtype, hold
            self.contiguous = t.is_contiguous()
            made.append(self)

    monkeypatch.setattr(_gpu, "_numba", lambda t, hold=True: View(t, hold))
    monkeypatch.setattr(_gpu, "_VIEWS", {})
    x = torch.zeros((2, 3, 8), dtype=torch.bfloat16, requires_grad=True)  # detached before viewing
    v = _gpu._view(x, (6, 8), torch.int16)
    assert (v.ptr, v.shape, v.dtype, v.hold, v.contiguous) == (x.data_ptr(), (6, 8), torch.int16, False, True)
    reshape, kept = torch.Tensor.reshape, [False]

    def no_tensor_for_a_kept_view(t, *shape):
        assert not kept[0], "a tensor made for a kept view"
        return reshape(t, *shape)

    monkeypatch.setattr(torch.Tensor, "reshape", no_tensor_for_a_kept_view)
    kept[0] = True
    assert _gpu._view(x, (6, 8), torch.int16) is v and len(made) == 1
    kept[0] = False
    assert _gpu._view(x, (6, 8)).dtype == torch.bfloat16 and _gpu._view(x, (48,)).shape == (48,)
    assert _gpu._view(x[1:], (3, 8), torch.int16).ptr == x[1:].data_ptr()  # a row range: its own address
    assert len(made) == 4
    strided = torch.arange(12.0).reshape(3, 4).T  # (4, 3), not contiguous
    c = _gpu._view(strided, (12,))
    assert c.hold and c.contiguous and c.ptr != strided.data_ptr() and len(made) == 5
    assert _gpu._view(strided, (12,)) is not c  # a copy is never kept
