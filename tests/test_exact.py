"""The exactly rounded streaming sum behind perplexity: one rounding of the exact total, in any chunking."""

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turbometrics import _exact
from turbometrics._exact import ExactSum


def rounded(values) -> float:
    """The exact total rounded once (Fraction arithmetic; float() rounds half to even)."""
    return float(sum(map(Fraction, values), Fraction(0)))


floats = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(floats, max_size=60), cut=st.integers(0, 60), binned=st.booleans())
def test_one_rounding_in_any_chunking(values, cut, binned):
    v = np.array(values, dtype=np.float64)
    try:
        expected = rounded(values)
    except OverflowError:
        expected = math.inf if sum(map(Fraction, values)) > 0 else -math.inf
    old = _exact._PENDING
    _exact._PENDING = 0 if binned else old  # the binned path and the pending (fsum) path
    try:
        whole = ExactSum().add(v).value()
        parts = (ExactSum().add(v[:cut]) + ExactSum().add(v[cut:])).value()
        reverse = ExactSum().add(v[cut:]).add(v[:cut]).value()
    finally:
        _exact._PENDING = old
    assert whole == parts == reverse == expected
    assert math.copysign(1, whole) == 1 or whole != 0  # never -0.0


@pytest.mark.parametrize("pending", ["default", "none"])
def test_paths_agree_on_extremes(pending, monkeypatch):
    if pending == "none":  # every value binned: the bins' float parts, their overflow, the integer fallback
        monkeypatch.setattr(_exact, "_PENDING", 0)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(10_000) * 10.0 ** rng.integers(-300, 300, 10_000)
    small = v[:100]
    assert ExactSum().add(small).value() == rounded(small.tolist())  # pending: fsum
    assert ExactSum().add(v).value() == rounded(v.tolist())  # over _PENDING: the bins
    assert (ExactSum().add(v[:3]) + ExactSum().add(v[3:])).value() == rounded(v.tolist())
    big = np.array([1e308, 1e308, -1e308])  # fsum's intermediate overflow
    assert ExactSum().add(big).value() == 1e308
    assert ExactSum().add(np.array([1e308, 1e308])).value() == math.inf
    assert math.isnan(ExactSum().add(np.array([1.0, np.inf, -np.inf])).value())
    assert ExactSum().add(np.array([1.0, np.inf])).value() == math.inf
    assert math.isnan(ExactSum().add(np.array([1.0])).add(np.array([np.nan])).value())
    assert ExactSum().value() == 0.0 and ExactSum().add(np.array([-0.0])).value() == 0.0
    tiny = np.array([5e-324, 5e-324, -1e-310, 2.2250738585072014e-308, 1e-300])  # subnormals
    assert ExactSum().add(tiny).value() == rounded(tiny.tolist())
    assert ExactSum().add(np.array([1e300, -1e300, 3e-320])).value() == 3e-320
    assert ExactSum().add(np.array([1.5, -1.5])).value() == 0.0


@pytest.mark.parametrize("n", [5, 5000])
def test_pickles_with_its_state(n):
    v = np.random.default_rng(1).standard_normal(n)
    s = pickle.loads(pickle.dumps(ExactSum().add(v)))
    assert s.value() == rounded(v.tolist())
    assert s.add(v).value() == rounded(v.tolist() * 2)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(floats, max_size=80))
def test_compiled_fsum_rounds_once(values):
    """``_dense.fsum`` (ExactSum's small sums): the exact total rounded once, or None (give up)."""
    from turbometrics._ext import _dense

    got = _dense.fsum(np.array(values, dtype=np.float64))
    try:
        expected = rounded(values)
    except OverflowError:
        expected = None
    if got is not None:  # None only where a partial overflows (or more than 64 partials)
        assert got == expected and (got != 0 or math.copysign(1, got) == 1)
    else:
        assert expected is None or max(map(abs, values)) > 1e307


def test_compiled_fsum_halfway_and_give_up():
    from turbometrics._ext import _dense

    for v in (
        [1.0, 2.0**-53, 2.0**-106],
        [1.0, 2.0**-53, -(2.0**-106)],
        [1.0, -(2.0**-54), -(2.0**-107)],
        [1e16, 1.0, 1e-16],
        [0.1] * 10,
        [],
        [-0.0],
        [5e-324] * 7,
    ):
        assert _dense.fsum(np.array(v, dtype=np.float64)) == rounded(v)
    assert _dense.fsum(np.array([1e308, 1e308, -1e308])) is None  # an overflowing partial
    assert _dense.fsum(np.array([1.0, np.nan])) is None
    spread = np.ldexp(1.0, np.arange(-1074, 1000, 20))  # ~100 non-overlapping partials
    assert _dense.fsum(spread) is None
    assert _dense.fsum(spread[:60]) == rounded(spread[:60].tolist())
