// The bindings' side of parallel.hpp (included by the .pyx modules only; the kernels stay plain C++):
// the poll hook that lets Ctrl-C stop a long call, and the `except +` handler of every kernel.
#pragma once
#include <Python.h>

#include <new>
#include <stdexcept>

#include "parallel.hpp"

namespace tmp {

// Run Python's signal handlers on the calling thread; true when one raised (its exception is set).
static bool py_poll() {
  const PyGILState_STATE g = PyGILState_Ensure();
  const bool raised = PyErr_CheckSignals() != 0;
  PyGILState_Release(g);
  return raised;
}

static inline void install_poll() { poll_hook = py_poll; }

// A kernel's C++ exception as a Python one: allocation failure -> MemoryError, a size limit ->
// ValueError; after an interrupt the signal handler's exception (KeyboardInterrupt) is already set.
static void raise_py() {
  try {
    throw;
  } catch (const Interrupted&) {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
  } catch (const std::bad_alloc& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in a turbometrics kernel");
  }
}

}  // namespace tmp
