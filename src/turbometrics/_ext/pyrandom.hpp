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

#include <algorithm>
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

  // Draws come in pairs of words and a fresh generator starts at a twist, so every 624-word block holds
  // exactly 312 random() values: made a block at a time, floor(random() * n) for all of them in one loop
  // (vectorized), instead of a test for the twist at every word.
  void indices(double nf, int32_t* out) {
    legacy::twist(mt);
    for (int p = 0; p < legacy::N / 2; ++p) {
      // a < 2^27, b < 2^26: signed conversions, which SSE2 has in vector form (unsigned ones it has not)
      const int32_t a = (int32_t)(legacy::temper(mt[2 * p]) >> 5), b = (int32_t)(legacy::temper(mt[2 * p + 1]) >> 6);
      out[p] = (int32_t)(((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0) * nf);
    }
  }
};
constexpr int PER_BLOCK = legacy::N / 2;

// Neumaier's step of CPython's sum (the first item is added plainly, as to the int 0).
static inline void neumaier(double& s, double& c, double x) {
  const double t = s + x;
  if (std::fabs(s) >= std::fabs(x))
    c += (s - t) + x;
  else
    c += (x - t) + s;
  s = t;
}

// The index stream of one generator: take(dst, m) copies the next m indices, a block made when one runs out.
struct Stream {
  Random g;
  double nf;
  int32_t block[PER_BLOCK];
  int b = PER_BLOCK;  // the next unread index of the block
  Stream(uint64_t seed, int64_t n) : g(seed), nf((double)n) {}
  void take(int32_t* dst, int64_t m) {
    while (m > 0) {
      if (b == PER_BLOCK) {
        g.indices(nf, block);
        b = 0;
      }
      const int64_t c = std::min<int64_t>(m, PER_BLOCK - b);
      std::copy(block + b, block + b + c, dst);
      b += (int)c;
      dst += c;
      m -= c;
    }
  }
};

// Resamples a group: G consecutive resamples' indices are held at once (at most 1 MiB of them), and their
// sums are G independent chains of additions, which overlap; one resample's float sum alone waits on each
// addition (it must keep the draw order).
static inline int64_t group_of(int64_t n) { return std::max<int64_t>(1, std::min<int64_t>(8, ((int64_t)1 << 18) / n)); }

// One chunk: R resamples of n draws from Random(seed), each summed over rows (n, k) into out (R, k).
// ``idx`` holds group_of(n) * n indices, ``comp`` group_of(n) * k doubles.
template <class T> static void chunk_sums(uint64_t seed, int64_t R, const T* rows, int64_t n, int64_t k, int mode,
                                          T* out, std::vector<int32_t>& idx, std::vector<double>& comp) {
  Stream st(seed, n);
  const int64_t G = group_of(n);
  for (int64_t r0 = 0; r0 < R; r0 += G) {
    const int64_t g = std::min(G, R - r0);
    st.take(idx.data(), g * n);
    for (int64_t i = 0; i < g * n; ++i)
      if ((uint64_t)idx[i] >= (uint64_t)n) throw std::logic_error("random() * n reached n");  // never: random() < 1
    T* o = out + r0 * k;
    std::fill(o, o + g * k, T(0));
    std::fill(comp.begin(), comp.end(), 0.0);
    const bool neu = std::is_same_v<T, double> && mode == NEUMAIER;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t h = 0; h < g; ++h) {
        const T* row = rows + (int64_t)idx[h * n + j] * k;
        T* oh = o + h * k;
        if constexpr (std::is_same_v<T, double>) {
          if (neu && j > 0) {
            for (int64_t q = 0; q < k; ++q) neumaier(oh[q], comp[h * k + q], row[q]);
            continue;
          }
        }
        for (int64_t q = 0; q < k; ++q) oh[q] += row[q];
      }
    if (neu)
      for (int64_t q = 0; q < g * k; ++q)
        if (comp[q] != 0.0 && std::isfinite(comp[q])) o[q] += comp[q];
    tmthreads::tick(g * n * k);
  }
}

}  // namespace pyrand

// out (C * R, k): for chunk c < C, random.Random(c0 + c) draws R resamples of n with choices(k=n); row
// c * R + r holds resample r's sum of rows[i] over its draws i (rows (n, k), n >= 1): int64 exactly, double in
// draw order as Python's sum in ``mode`` (pyrand::PLAIN or NEUMAIER). c0 + C <= 2^64.
template <class T> static inline void python_choice_sums(uint64_t c0, int64_t C, int64_t R, const T* rows, int64_t n,
                                                         int64_t k, int mode, T* out, int nthreads) {
  if (n < 1 || n > INT32_MAX || k < 0 || R < 0 || C < 0)
    throw std::invalid_argument("python_choice_sums: need 1 <= n < 2^31 rows");
  const int64_t G = pyrand::group_of(n);
  struct Scratch {
    std::vector<int32_t> idx;
    std::vector<double> comp;
  };
  tmthreads::parallel_for(
      C, 1, nthreads,
      [&] { return Scratch{std::vector<int32_t>((size_t)(G * n)), std::vector<double>((size_t)(G * k))}; },
      [&](Scratch& s, int64_t c) {
        pyrand::chunk_sums<T>(c0 + (uint64_t)c, R, rows, n, k, mode, out + c * R * k, s.idx, s.comp);
      },
      "bootstrap");
}

}  // namespace tmk
