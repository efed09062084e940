"""Input coercion: zero-copy views of NumPy/torch/DLPack memory, and their results."""
import numpy as np
import torch

import turbometrics as tm
from turbometrics import _validate as V


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
    assert np.shares_memory(V.as_array(t, "x").data, t.numpy())
    assert np.shares_memory(V.as_array(DLPackOnly(t), "x").data, t.numpy())
    b = t.bfloat16()
    assert V.as_array(b, "x").data.ctypes.data == b.data_ptr()
    view = t.numpy()[::-1, 1:]
    assert np.shares_memory(V.rows3d(view, "x"), t.numpy())  # strided rows need no copy


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
