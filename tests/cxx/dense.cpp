// A translation unit that instantiates every dense kernel of every SIMD path,
// for tests/test_portability.py: compiled with other compilers and targets
// (aarch64 NEON, macOS) and inspected for vector code. Not part of the build.
#include "dense.hpp"
#include "resample.hpp"  // the resampling kernels, compiled per path too

extern "C" {
void tm_use_path(int i) { tmk::use_path(i); }                    // without it the kernel tables are dead code
int tm_path_supported(int i) { return tmk::path_supported(i); }  // cpu.hpp's CPUID reading
void tm_nll_rows(const tmk::Rows* x, int code, const int64_t* t, double* out, int n) {
  tmk::nll_rows(*x, code, t, out, n);
}
void tm_topk_rows(const tmk::Rows* x, int code, int64_t itemsize, int64_t k, char* v, int64_t* i, int n) {
  tmk::topk_rows(*x, code, itemsize, k, true, true, v, i, n);
}
void tm_resample_sums(const int32_t* x32, const int64_t* x64, const double* xf, int64_t k, int64_t n,
                      const int32_t* counts, int64_t R, int64_t* o, double* of, int t) {
  tmk::resample_sums(x32, k, n, counts, R, o, t);
  tmk::resample_sums(x64, k, n, counts, R, o, t);
  tmk::resample_sums(xf, k, n, counts, R, of, t);
}
int64_t tm_legacy(uint32_t* key, int64_t pos, const double* rows, int64_t n, int64_t m, const int64_t* idx, int64_t S,
                  int64_t* draws, double* out, int t) {
  tmk::legacy_ordered_means(rows, n, m, idx, S, n, out, t);
  pos = tmk::legacy_randint(key, pos, (uint64_t)n - 1, draws, S * n);
  return tmk::legacy_bootstrap_means(key, pos, rows, n, m, S, 7, out, t);
}
void tm_rank_rows(const tmk::Rows* x, int code, const int64_t* t, int64_t* out, int n) {
  tmk::rank_rows(*x, code, t, false, true, out, n);
}
}
