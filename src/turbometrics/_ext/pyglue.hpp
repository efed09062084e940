// The bindings' side of parallel.hpp (included by the .pyx modules only; the kernels stay plain C++):
// the poll hook that lets Ctrl-C stop a long call, and the `except +` handler of every kernel.
#pragma once
#include <Python.h>

#include <new>
#include <stdexcept>

#include "parallel.hpp"

namespace tmthreads {

static unsigned long main_thread = 0;  // Python's main thread: the only one that runs signal handlers

// Run Python's signal handlers; true when one raised (its exception is set). Only on the main thread
// (elsewhere they cannot run, and taking the GIL would only slow the other threads), and never while
// the interpreter finalizes (taking the GIL then ends a daemon thread in the middle of the kernel).
static bool py_poll() {
  if (PyThread_get_thread_ident() != main_thread) return false;
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  const PyGILState_STATE g = PyGILState_Ensure();
  const bool raised = PyErr_CheckSignals() != 0;
  PyGILState_Release(g);
  return raised;
}

#ifndef _WIN32
// In a forked child Python's main thread is the thread that forked (its signal handlers run there).
static void py_after_fork() { main_thread = PyThread_get_thread_ident(); }
#endif

static inline void install_poll(unsigned long main_thread_ident) {
  main_thread = main_thread_ident;
  poll_hook.store(py_poll);
#ifndef _WIN32
  pthread_atfork(nullptr, nullptr, py_after_fork);
#endif
}

// A kernel's C++ exception as a Python one: allocation failure -> MemoryError, a size limit ->
// ValueError; after an interrupt the signal handler's exception (KeyboardInterrupt) is already set.
static void raise_py() {
  if (PyErr_Occurred()) return;  // a signal handler's exception (Ctrl-C) stands, whatever else failed
  try {
    throw;
  } catch (const Interrupted&) {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
  } catch (const std::bad_alloc& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::exception& e) { PyErr_SetString(PyExc_RuntimeError, e.what()); } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in a turbometrics kernel");
  }
}

}  // namespace tmthreads
