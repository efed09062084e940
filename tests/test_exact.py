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
    assert ExactSum().add(small).value() == rounded(small.tolist())          # pending: fsum
    assert ExactSum().add(v).value() == rounded(v.tolist())                  # over _PENDING: the bins
    assert (ExactSum().add(v[:3]) + ExactSum().add(v[3:])).value() == rounded(v.tolist())
    big = np.array([1e308, 1e308, -1e308])                                   # fsum's intermediate overflow
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
