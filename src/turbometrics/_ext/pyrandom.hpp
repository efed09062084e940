// Python's own ``random`` module, draw for draw, summed over drawn rows.
//
// lm-evaluation-harness estimates the standard error of a corpus statistic by bootstrap: chunk c of
// ``iters // 1000`` draws ``random.Random(c).choices(xs, k=len(xs))`` 1000 times and applies the statistic
// to each resample, in a process pool. The statistics it bootstraps (perplexity, F1, MCC, BLEU, chrF, TER)
// are functions of sums over the resample: here the same draws are made in compiled code and summed, one
// chunk per parallel item.
//
// From CPython's Modules/_randommodule.c and Lib/random.py (3.10 to 3.13 agree):
//   - Random(seed) for an int seed: init_by_array(abs(seed) as 32-bit words, lowest first; [0] for 0),
//     then the first draw twists (index = N);
//   - random() = genrand_res53: (a >> 5) * 2^26 + (b >> 6), times 2^-53, from two consecutive words;
//   - choices(population, k=k) without weights: population[floor(random() * n)], n converted to float.
// The MT19937 twist and tempering are NumPy's (resample.hpp, namespace legacy): the same generator.
//
// Float sums follow the draw order as Python's built-in ``sum`` adds them: before 3.12 one addition at a time
// from 0; from 3.12 with Neumaier's compensation (bltinmodule.c: the first item added to the int 0, then
// t = s + x with the lost part kept in c, and c added at the end when it is nonzero and finite). The Python
// side picks the mode by probing ``sum`` itself (_python_rng.py). Integer sums are exact in any order.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "parallel.hpp"
#include "resample.hpp"  // legacy::twist, legacy::temper: MT19937

namespace tmk {
namespace pyrand {

constexpr int PLAIN = 0, NEUMAIER = 1;

// random.Random(seed) for 0 <= seed < 2^64: init_genrand(19650218), then init_by_array(key).
struct Random {
  uint32_t mt[legacy::N];
  int pos = legacy::N;

  explicit Random(uint64_t seed) {
    using legacy::N;
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const int len = (seed >> 32) ? 2 : 1;
    mt[0] = 19650218u;
    for (int i = 1; i < N; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + (uint32_t)i;
    int i = 1, j = 0;
    for (int k = N > len ? N : len; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
      ++i;
      ++j;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
      if (j >= len) j = 0;
    }
    for (int k = N - 1; k; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
      ++i;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000u;
  }

  uint32_t next() {
    if (pos == legacy::N) {
      legacy::twist(mt);
      pos = 0;
    }
    return legacy::temper(mt[pos++]);
  }
  double random() {
    const uint32_t a = next() >> 5, b = next() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }
};

// Neumaier's step of CPython's sum (the first item is added plainly, as to the int 0).
static inline void neumaier(double& s, double& c, double x) {
  const double t = s + x;
  if (std::fabs(s) >= std::fabs(x))
    c += (s - t) + x;
  else
    c += (x - t) + s;
  s = t;
}

// One chunk: R resamples of n draws from Random(seed), each summed over rows (n, k) into out (R, k).
template <class T> static void chunk_sums(uint64_t seed, int64_t R, const T* rows, int64_t n, int64_t k, int mode,
                                          T* out, std::vector<double>& comp) {
  Random g(seed);
  const double nf = (double)n;
  for (int64_t r = 0; r < R; ++r) {
    T* o = out + r * k;
    for (int64_t q = 0; q < k; ++q) o[q] = T(0);
    if constexpr (std::is_same_v<T, double>) std::fill(comp.begin(), comp.end(), 0.0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = (int64_t)(g.random() * nf);                                      // floor: the product is >= 0
      if ((uint64_t)i >= (uint64_t)n) throw std::logic_error("random() * n reached n");  // never: r < 1
      const T* row = rows + i * k;
      if constexpr (std::is_same_v<T, double>) {
        if (mode == NEUMAIER && j > 0)
          for (int64_t q = 0; q < k; ++q) neumaier(o[q], comp[q], row[q]);
        else
          for (int64_t q = 0; q < k; ++q) o[q] += row[q];
      } else {
        for (int64_t q = 0; q < k; ++q) o[q] += row[q];
      }
    }
    if constexpr (std::is_same_v<T, double>)
      if (mode == NEUMAIER)
        for (int64_t q = 0; q < k; ++q)
          if (comp[q] != 0.0 && std::isfinite(comp[q])) o[q] += comp[q];
    tmthreads::tick(n * k);
  }
}

}  // namespace pyrand

// out (C * R, k): for chunk c < C, random.Random(c0 + c) draws R resamples of n with choices(k=n); row
// c * R + r holds resample r's sum of rows[i] over its draws i (rows (n, k), n >= 1): int64 exactly, double in
// draw order as Python's sum in ``mode`` (pyrand::PLAIN or NEUMAIER). c0 + C <= 2^64.
template <class T> static inline void python_choice_sums(uint64_t c0, int64_t C, int64_t R, const T* rows, int64_t n,
                                                         int64_t k, int mode, T* out, int nthreads) {
  if (n < 1 || k < 0 || R < 0 || C < 0) throw std::invalid_argument("python_choice_sums: need n >= 1 rows");
  tmthreads::parallel_for(
      C, 1, nthreads, [&] { return std::vector<double>((size_t)k, 0.0); },
      [&](std::vector<double>& comp, int64_t c) {
        pyrand::chunk_sums<T>(c0 + (uint64_t)c, R, rows, n, k, mode, out + c * R * k, comp);
      },
      "bootstrap");
}

}  // namespace tmk
