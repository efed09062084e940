"""The bindings' glue (pyglue.hpp), cimported by _dense.pyx and _text.pyx: how a kernel's C++ failure or
a Ctrl-C becomes a Python exception."""

cdef extern from "pyglue.hpp" namespace "tmthreads":
    void raise_py()       # the `except +` handler of every kernel (MemoryError, ValueError, KeyboardInterrupt)
    void install_poll(unsigned long main_thread)  # long kernels poll the signal handlers: Ctrl-C stops them


cdef inline install_signal_poll():
    """Let long kernels run Python's signal handlers on the main thread (so Ctrl-C stops them): once per module."""
    import threading
    install_poll(threading.main_thread().ident)
