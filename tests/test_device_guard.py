"""Input on a GPU other than the current one: every GPU entry point makes the input's device current for the
call (``_arrays.device_guard``), as torch's own operations do. Here with stand-in CUDA tensors and a recording
``torch.cuda.device``: the guard is entered before any device work, with the input's index, and left after it;
tests/gpu/test_updates.py runs real tensors on a second GPU where a machine has two."""

import sys
import types

import numpy as np
import pytest

import turbometrics as tm
from turbometrics import _arrays, _gpu, _gpu_tally, _gpu_token_ids, lm_head


class FakeCuda:
    """Enough of a CUDA torch tensor for the dispatch to take the GPU path (told by its module, as is_torch)."""

    __module__ = "torch.stand_in"
    is_cuda = True
    ndim, shape, dtype = 2, (2, 3), "float32"

    def __init__(self, index: int):
        self.index = index

    def get_device(self) -> int:
        return self.index

    def numpy(self):  # is_torch asks that the type has it
        raise AssertionError("a GPU input must not be read on the host")


class Entered(Exception):
    """Raised by the recording guard: the call reached the guard before anything else touched the input."""


@pytest.fixture
def guards(monkeypatch):
    """torch with GPU 0 current and ``torch.cuda.device(i)`` recorded: [(event, i), ...]."""
    torch = pytest.importorskip("torch")
    events: list = []

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            events.append(("enter", self.i))
            if self.i == 13:  # (the index that asks for the early stop)
                raise Entered

        def __exit__(self, *exc):
            events.append(("exit", self.i))
            return False

    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)  # (a CPU build has none)
    monkeypatch.setattr(torch.cuda, "device", Device)
    return events


def test_the_guard_makes_the_inputs_gpu_current_only_where_another_one_is(guards):
    torch = pytest.importorskip("torch")
    assert _arrays.device_guard(FakeCuda(0)) is _arrays.device_guard(np.zeros(3))  # current already: nothing to do
    assert _arrays.device_guard(torch.zeros(3)) is _arrays.device_guard(None)  # a CPU tensor
    seen = []

    @_arrays.on_input_device
    def work(x, y, *, z):
        seen.append((list(guards), y, z))
        return "done"

    assert work(FakeCuda(1), 2, z=3) == "done"
    assert seen == [([("enter", 1)], 2, 3)] and guards == [("enter", 1), ("exit", 1)]
    guards.clear()

    @_arrays.on_input_device
    def fails(x):
        raise ValueError("bad targets")

    with pytest.raises(ValueError, match="bad targets"):
        fails(FakeCuda(2))
    assert guards == [("enter", 2), ("exit", 2)]  # the caller's device comes back on errors too


def test_a_forked_child_is_left_to_the_calls_own_fork_check(guards, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    assert _arrays.device_guard(FakeCuda(1)) is _arrays.device_guard(None)  # (_gpu._cuda raises FORKED next)


def test_cupy_arrays_use_their_own_device_as_the_guard(monkeypatch):
    class Device:
        def __init__(self, i):
            self.id = i

    class FakeCupy:
        __module__ = "cupy._core.stand_in"
        __cuda_array_interface__ = {"data": (0, False)}

        def __init__(self, i):
            self.device = Device(i)

    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0)))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    other = FakeCupy(1)
    assert _arrays.device_guard(other) is other.device
    assert _arrays.device_guard(FakeCupy(0)) is _arrays.device_guard(None)


ENTRY_POINTS = [
    _gpu.nll,
    _gpu.nll_later,
    _gpu.ranks,
    _gpu.topk,
    _gpu.lcs,
    _gpu.ngram_matches,
    _gpu_tally.nll_total,
    _gpu_tally.rank_hits,
    _gpu_token_ids.bleu_later,
    _gpu_token_ids.rouge_later,
    lm_head._rows_torch,
]


@pytest.mark.parametrize("fn", ENTRY_POINTS, ids=lambda f: f.__module__.split(".")[-1] + "." + f.__name__)
def test_every_gpu_entry_point_is_guarded(fn):
    assert fn.__code__ is _arrays.on_input_device(lambda x: x).__code__, f"{fn.__name__} runs on the current device"


CALLS = {
    "token_nll": lambda x: tm.token_nll(x, [0, 1]),
    "perplexity": lambda x: tm.perplexity(x, [0, 1]),
    "topk": lambda x: tm.topk(x, 2),
    "topk_accuracy": lambda x: tm.topk_accuracy(x, [0, 1], k=2),
    "mean_reciprocal_rank": lambda x: tm.mean_reciprocal_rank(x, [0, 1]),
    "target_rank": lambda x: tm.target_rank(x, [0, 1]),
    "MeanReciprocalRank.update": lambda x: tm.metrics.MeanReciprocalRank().update(x, [0, 1]),
    "Perplexity.update": lambda x: tm.metrics.Perplexity().update(x, [0, 1]),
    "TopKAccuracy.update": lambda x: tm.metrics.TopKAccuracy(k=2).update(x, [0, 1]),
    "BLEU.update": lambda x: tm.metrics.BLEU().update(x, x),
    "ROUGE.update": lambda x: tm.metrics.ROUGE().update(x, x),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_public_calls_reach_the_guard_before_any_device_work(guards, call):
    with pytest.raises(Entered):
        CALLS[call](FakeCuda(13))
    assert guards == [("enter", 13)]
