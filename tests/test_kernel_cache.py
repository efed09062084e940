"""The compiled-kernel disk cache (``turbometrics._kernels.cuda.jit``) without a GPU: every kernel has it, with the
kernel sources' digest as its staleness stamp; the cache keys of our factories' kernels are the same in every
process (what makes a hit possible); a cache that fails is switched off with a warning; the switch. The hit
itself (a new process skipping the JIT) is timed on a GPU by tools/gpu_first_call.py."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu  # numba.cuda's host side, no GPU needed

pytest.importorskip("numba.cuda")

KERNELS = textwrap.dedent("""
    import hashlib
    from numba.cuda.serialize import dumps
    from turbometrics._kernels import cuda as K
    kernels = [K.lcs_pairs, K.ngram_matches, K.topk_rows(K.WIDEN_F32), K.topk_rows(K.WIDEN_F32, None)]
    for group in (K.TPB, 32):
        kernels.append(K.nll_rows(K.WIDEN_BF16_PAIRS, group))
        for widen in (K.WIDEN_F32, K.WIDEN_BF16, K.WIDEN_F64):
            kernels += [K.nll_rows(widen, group), K.fold_rows(widen, group), K.score_rows(widen, group),
                        K.rank_rows(widen, group)]
    class Codegen:  # the compute capability's part of the key (asks the GPU)
        def magic_tuple(self):
            return ("sm_90",)
    for d in kernels:
        key = hashlib.sha256(dumps(d._cache._index_key((), Codegen()))).hexdigest()
        index = d._cache._cache_file._index_name
        print(index, type(d._cache).__name__, d._cache._cache_file._source_stamp[1], key)
""")


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    """numba's cache directory (NUMBA_CACHE_DIR, read when numba is imported) for this test alone."""
    from numba.cuda.core import config

    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    return tmp_path


def run(code, **env):
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout.splitlines()


def test_every_kernel_is_cached_with_keys_that_hold_across_processes():
    from turbometrics._kernels.cuda import jit

    first = run(KERNELS, PYTHONHASHSEED="1")
    assert len(first) == 30
    digest = jit._sources_digest()
    for line in first:
        name, cache, stamp, _ = line.split()
        assert cache == "KernelCache" and stamp == digest, line
    assert run(KERNELS, PYTHONHASHSEED="2") == first  # the same closure keys in another process
    # a key of its own for each specialisation (in its function's index)
    assert len({(line.split()[0], line.split()[3]) for line in first}) == len(first)


def test_the_switch_turns_the_cache_off():
    code = "from turbometrics._kernels import cuda as K; print(type(K.lcs_pairs._cache).__name__)"
    assert run(code, TURBOMETRICS_KERNEL_CACHE="0") == ["NullCache"]


def test_a_failing_cache_is_logged_once_and_stays_off(monkeypatch, cache_dir, caplog):
    from numba.cuda.dispatcher import CUDACache

    from turbometrics._kernels.cuda import jit

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jit, "_WARNED", [])
    made = jit._cache_class()
    cache, other = made(_some_function), made(_some_function)
    monkeypatch.setattr(CUDACache, "save_overload", fail)
    cache.save_overload(None, None)
    other.save_overload(None, None)  # another kernel: not reported again (a dozen kernels would repeat it)
    assert [r.getMessage().count("could not be written") for r in caplog.records] == [1]
    assert not cache._enabled and not other._enabled
    monkeypatch.setattr(jit, "_WARNED", [])
    monkeypatch.setattr(CUDACache, "load_overload", fail)
    assert made(_some_function).load_overload(None, None) is None
    assert "could not be read" in caplog.records[-1].getMessage()


def test_no_usable_cache_directory_is_logged_once_not_an_error():
    """Read-only package and home directories: numba finds nowhere to keep kernels; importing and making kernels
    still works with warnings as errors, and one line is logged for all of them."""
    code = textwrap.dedent("""
        import logging, warnings
        warnings.simplefilter("error")
        from numba.cuda.core import caching
        def nowhere(*a, **k):
            raise RuntimeError("cannot cache function: no locator available")
        caching.CacheImpl.__init__ = nowhere
        lines = []
        logging.getLogger("turbometrics.gpu").addHandler(logging.Handler())
        logging.getLogger("turbometrics.gpu").handlers[0].emit = lambda r: lines.append(r.getMessage())
        from turbometrics._kernels import cuda as K
        kernels = [K.nll_rows(K.WIDEN_F32, K.TPB), K.rank_rows(K.WIDEN_F32, 32), K.topk_rows(K.WIDEN_F32)]
        print(len(lines), type(K.lcs_pairs._cache).__name__, "NUMBA_CACHE_DIR" in lines[0])
    """)
    assert run(code) == ["1 NullCache True"]


def test_an_entry_from_older_sources_is_a_miss(monkeypatch, cache_dir):
    """A save whose data write failed (a full disk, a killed process) leaves an index for the new sources naming a
    data file that older sources' kernel still fills: the sources' digest is in the key, so that is a miss."""
    from turbometrics._kernels.cuda import jit

    stub = stand_ins()
    monkeypatch.setattr(jit, "_sources_digest", lambda: "old sources")
    old = stub.cache(jit._cache_class(), "a")
    old.save_overload((), stub.Compiled("old kernel"))
    monkeypatch.setattr(jit, "_sources_digest", lambda: "new sources")
    new = stub.cache(jit._cache_class(), "a")

    def full(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(new._cache_file, "_save_data", full)
    new.save_overload((), stub.Compiled("new kernel"))  # the index is written, its data file is not
    fresh = stub.cache(jit._cache_class(), "a")
    assert fresh._cache_file._load_index()  # names the old data file
    assert fresh.load_overload((), stub.Target()) is None


def test_compile_options_are_in_the_key():
    """A debugging run (NUMBA_OPT=0) must not leave its kernels to later runs, also for kernels with no closure."""
    plain, unoptimised = run(KERNELS), run(KERNELS, NUMBA_OPT="0")
    for a, b in zip(plain, unoptimised):
        assert a.split()[3] != b.split()[3], a  # every kernel's key differs


def stand_ins():
    """What numba's cache calls on a compiled kernel and a target context (a GPU's), standing in."""

    class Codegen:
        def magic_tuple(self):
            return ("sm_90",)

    class Compiled:  # what numba saves: a compiled kernel (here its name) and its code generator
        codegen = Codegen()

        def __init__(self, name):
            self.name = name

    class Target:
        def refresh(self):
            pass

        def codegen(self):
            return Codegen()

    def cache(made, which):
        c = made(_some_function, (("which", which),))
        c._impl.reduce = lambda compiled: compiled.name
        c._impl.rebuild = lambda target, payload: payload
        return c

    return type("StandIns", (), {"Codegen": Codegen, "Compiled": Compiled, "Target": Target, "cache": cache})


def _some_function():  # a function with a source file, for caches made in these tests
    pass


def test_an_entry_holding_another_keys_kernel_is_a_miss(monkeypatch, cache_dir):
    """Two processes filling one cache at once can leave an index entry naming a data file that the other wrote
    for another specialisation; each entry holds its key, so that loads as a miss, never as the wrong kernel."""
    from turbometrics._kernels.cuda import jit

    stub = stand_ins()
    made = jit._cache_class()
    a, b = stub.cache(made, "a"), stub.cache(made, "b")
    a.save_overload((), stub.Compiled("kernel a"))
    assert a.load_overload((), stub.Target()) == "kernel a" and b.load_overload((), stub.Target()) is None
    b.save_overload((), stub.Compiled("kernel b"))
    assert b.load_overload((), stub.Target()) == "kernel b" and a.load_overload((), stub.Target()) == "kernel a"
    # the race: a's index entry names the data file b's process wrote last
    index = a._cache_file._load_index()
    key_a, key_b = a._index_key((), stub.Codegen()), b._index_key((), stub.Codegen())
    index[key_a] = index[key_b]
    a._cache_file._save_index(index)
    assert a.load_overload((), stub.Target()) is None  # a miss: compiled and saved again
    a.save_overload((), stub.Compiled("kernel a"))
    assert a.load_overload((), stub.Target()) == "kernel a" and b.load_overload((), stub.Target()) == "kernel b"
