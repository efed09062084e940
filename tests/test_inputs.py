"""Input coercion: zero-copy views of NumPy/torch/DLPack memory, and their results."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import turbometrics as tm
from turbometrics import _validate


class DLPackOnly:
    """An array that offers nothing but DLPack (as JAX or CuPy-on-host objects may)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kw):
        return self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_torch_and_dlpack_inputs_are_viewed_not_copied():
    t = torch.randn(4, 6)
    assert np.shares_memory(_validate.as_array(t, "x").data, t.numpy())
    assert np.shares_memory(_validate.as_array(DLPackOnly(t), "x").data, t.numpy())
    b = t.bfloat16()
    assert _validate.as_array(b, "x").data.ctypes.data == b.data_ptr()
    view = t.numpy()[::-1, 1:]
    assert np.shares_memory(_validate.rows3d(view, "x"), t.numpy())  # strided rows need no copy


def test_dlpack_input_gives_the_same_numbers():
    logits = torch.randn(5, 30, dtype=torch.float64)
    targets = torch.randint(0, 30, (5,))
    assert tm.perplexity(DLPackOnly(logits), DLPackOnly(targets)) == tm.perplexity(logits.numpy(), targets.numpy())
    assert tm.topk_accuracy(DLPackOnly(logits), targets, k=3) == tm.topk_accuracy(logits.numpy(), targets, k=3)


def test_non_contiguous_torch_tensors():
    x = torch.randn(6, 40)[:, ::2]  # a strided class axis: copied, still right
    t = torch.randint(0, 20, (6,))
    assert tm.topk_accuracy(x, t, k=4) == tm.topk_accuracy(np.ascontiguousarray(x.numpy()), t.numpy(), k=4)
    v, i = tm.topk(x.T, 3, axis=0)
    tv, ti = torch.topk(x.T, 3, dim=0)
    assert torch.equal(v, tv) and torch.equal(i, ti)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, ">i8", ">u2"]


@settings(max_examples=150, deadline=None)
@given(
    dtype=st.sampled_from(INT_DTYPES),
    n=st.integers(0, 40),
    n_classes=st.integers(1, 300),
    ignore=st.one_of(st.none(), st.integers(-(2**70), 2**70), st.integers(-3, 300)),
    masked=st.booleans(),
    data=st.data(),
)
def test_targets_check_matches_numpy(dtype, n, n_classes, ignore, masked, data):
    """The compiled one-pass check of as_targets against the obvious NumPy steps, in every integer dtype
    (big-endian too), with ignore_index inside and outside the dtype's range, masks, and bad values."""
    info = np.iinfo(np.dtype(dtype))
    lo, hi = max(int(info.min), -5), min(int(info.max), n_classes + 5)
    vals = data.draw(
        st.lists(st.integers(lo, hi) | st.sampled_from([int(info.min), int(info.max)]), min_size=n, max_size=n)
    )
    t = np.array(vals, dtype=dtype).reshape(-1)[::-1]  # a strided view too
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool) if masked else None
    counted = np.ones(n, bool) if ignore is None else np.array([v != ignore for v in t.tolist()], bool)
    if mask is not None:
        counted &= mask
    live = [v for v, c in zip(t.tolist(), counted) if c]
    out_of_range = [v for v in live if not 0 <= v < n_classes]
    if out_of_range:
        bad = min(live) if min(live) < 0 else max(live)
        with pytest.raises(ValueError, match=f"found {bad}$"):
            _validate.as_targets(t, (n,), n_classes, ignore_index=ignore, mask=mask)
        return
    t64, got = _validate.as_targets(t, (n,), n_classes, ignore_index=ignore, mask=mask)
    np.testing.assert_array_equal(got, counted)
    np.testing.assert_array_equal(t64, np.where(counted, np.array(t.tolist(), dtype=object), -1).astype(np.int64))
    assert t64.dtype == np.int64 and t64.flags.c_contiguous
