// The kernels' logic at every vector width, on any x86-64 or aarch64 CPU: the
// 64-byte instantiation (the AVX-512 path's, 2 registers per pack) is compiled
// here once more without AVX-512 target attributes, so the compiler lowers its
// vectors generically, and run against the paths this CPU has. All must give
// the same bits. Built and run by tests/test_portability.py; not part of the build.
#include <cstdio>
#include <random>

#include "dense.hpp"

namespace tmk {
namespace w64 {
#define TM_VEC_BYTES 64
#define TM_PATH_NAME "64-byte logic, generic code"
#include "dense_kernels.hpp"
#undef TM_VEC_BYTES
#undef TM_PATH_NAME
}  // namespace w64
}  // namespace tmk

static uint16_t to_half(float f, bool bf16) {  // round to nearest even; NaN/inf kept
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (bf16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  const uint32_t sign = (u >> 16) & 0x8000u;
  if (f != f) return 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
  if (a < 6.103515625e-05f) return (uint16_t)(sign | (uint32_t)std::nearbyint(a * 16777216.0f));
  std::memcpy(&u, &a, 4);
  uint32_t m = u + 0xfffu + ((u >> 13) & 1u);
  return (uint16_t)(sign | ((m >> 13) - (112u << 10)));
}

int main() {
#if defined(__x86_64__) && defined(__GNUC__)
  // cpu.hpp's CPUID/XCR0 reading against the compiler's own (which the build does not use: see cpu.hpp)
  __builtin_cpu_init();
  const tmcpu::X86& f = tmcpu::features();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (f.popcnt != (bool)__builtin_cpu_supports("popcnt") || f.avx2 != (bool)__builtin_cpu_supports("avx2") ||
      f.avx512 != avx512) {
    std::printf("MISMATCH cpu.hpp popcnt %d avx2 %d avx512 %d, builtin %d %d %d\n", f.popcnt, f.avx2, f.avx512,
                (int)(bool)__builtin_cpu_supports("popcnt"), (int)(bool)__builtin_cpu_supports("avx2"), (int)avx512);
    return 1;
  }
#endif
  std::mt19937_64 gen(11);
  std::normal_distribution<double> normal(0.0, 6.0);
  std::vector<const tmk::Kernels*> paths = {&tmk::w64::kernels};
  for (int i = 0; i < tmk::N_PATHS; ++i)
    if (tmk::path_supported(i)) paths.push_back(tmk::PATHS[i]);
  long checked = 0, bad = 0;
  for (int64_t V : {1, 5, 31, 32, 33, 100, 2047, 2048, 2049, 5000}) {
    for (int rep = 0; rep < 6; ++rep) {
      std::vector<double> x((size_t)V);
      for (auto& v : x) v = normal(gen);
      if (rep == 1) x[0] = 400.0;  // far above the rest
      if (rep == 2)
        for (auto& v : x) v -= 200.0;  // the clamp path
      if (rep == 3 && V > 2) {
        x[V / 2] = -INFINITY;
        x[1] = std::round(x[1]);
        x[2] = x[1];
      }  // -inf, ties
      if (rep == 4) x[V - 1] = 1000.0;  // 16-bit: e^x overflows the table sum
      if (rep == 5)
        for (auto& v : x) v -= 800.0;  // 16-bit: the table sum underflows
      std::vector<float> xf(x.begin(), x.end());
      std::vector<uint16_t> xh(V), xb(V);
      for (int64_t i = 0; i < V; ++i) {
        xh[i] = to_half(xf[i], false);
        xb[i] = to_half(xf[i], true);
      }
      const char* rows[4] = {(const char*)xh.data(), (const char*)xb.data(), (const char*)xf.data(),
                             (const char*)x.data()};
      const int64_t item[4] = {2, 2, 4, 8};
      const int64_t target = (int64_t)(gen() % (uint64_t)V);
      for (int code = 0; code < 4; ++code) {
        const double want = paths[0]->nll[code](rows[code], V, target);
        for (size_t p = 1; p < paths.size(); ++p) {
          const double got = paths[p]->nll[code](rows[code], V, target);
          ++checked;
          if (std::memcmp(&got, &want, 8) != 0) {
            ++bad;
            std::printf("MISMATCH nll code %d V %lld rep %d: %s %.17g vs %s %.17g\n", code, (long long)V, rep,
                        paths[p]->name, got, paths[0]->name, want);
          }
        }
        for (int64_t k : {(int64_t)1, std::min<int64_t>(V, 7), V}) {
          std::vector<unsigned char> buf((size_t)(k + std::max<int64_t>(k, 64)) * 16);
          std::vector<char> v0((size_t)(k * item[code])), v1(v0.size());
          std::vector<int64_t> i0((size_t)k), i1((size_t)k);
          paths[0]->topk[code](rows[code], V, k, true, true, buf.data(), k + std::max<int64_t>(k, 64), v0.data(),
                               i0.data());
          for (size_t p = 1; p < paths.size(); ++p) {
            paths[p]->topk[code](rows[code], V, k, true, true, buf.data(), k + std::max<int64_t>(k, 64), v1.data(),
                                 i1.data());
            ++checked;
            if (i0 != i1 || v0 != v1) {
              ++bad;
              std::printf("MISMATCH topk code %d V %lld k %lld: %s\n", code, (long long)V, (long long)k,
                          paths[p]->name);
            }
          }
        }
        const int64_t t = rep == 3 && V > 2 ? 1 : target;  // rep 3: the target ties x[2]
        for (int side = 0; side < 4; ++side) {
          const int64_t want_r = paths[0]->rank[code](rows[code], V, t, side & 1, side & 2);
          for (size_t p = 1; p < paths.size(); ++p) {
            ++checked;
            if (paths[p]->rank[code](rows[code], V, t, side & 1, side & 2) != want_r) {
              ++bad;
              std::printf("MISMATCH rank code %d V %lld side %d: %s\n", code, (long long)V, side, paths[p]->name);
            }
          }
        }
      }
    }
  }
  std::printf("%s: %ld comparisons against", bad ? "FAILED" : "OK", checked);
  for (size_t p = 1; p < paths.size(); ++p) std::printf(" %s", paths[p]->name);
  std::printf(", %ld mismatches\n", bad);
  return bad != 0;
}
