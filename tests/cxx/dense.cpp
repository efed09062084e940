// A translation unit that instantiates every dense kernel of every SIMD path,
// for tests/test_portability.py: compiled with other compilers and targets
// (aarch64 NEON, macOS) and inspected for vector code. Not part of the build.
#include "dense.hpp"

extern "C" {
void tm_use_path(int i) { tmk::use_path(i); }  // without it the kernel tables are dead code
int tm_path_supported(int i) { return tmk::path_supported(i); }  // cpu.hpp's CPUID reading
void tm_nll_rows(const tmk::Rows* x, int code, const int64_t* t, double* out, int n) {
  tmk::nll_rows(*x, code, t, out, n);
}
void tm_topk_rows(const tmk::Rows* x, int code, int64_t itemsize, int64_t k, char* v, int64_t* i, int n) {
  tmk::topk_rows(*x, code, itemsize, k, true, true, v, i, n);
}
}
