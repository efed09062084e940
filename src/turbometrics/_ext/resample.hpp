// Bootstrap draws in compiled code, number for number NumPy's.
//
// The default mode of tm.bootstrap_ci / tm.paired_test draws resample r from its own generator,
// default_rng(SeedSequence(seed).spawn(count)[r]).integers(0, n, n, dtype=np.uint32). Made one
// resample at a time in Python that costs more than the sums (SeedSequence, PCG64, a call); here the same three steps run per resample in parallel:
//   1. SeedSequence: the entropy words, padded with zeros to the pool size (a spawned child), then
//      the spawn key's words, hashed into a pool of 4 words; generate_state(4, uint64) from the pool
//      (O'Neill's seed_seq alternative, as numpy/random/bit_generator.pyx).
//   2. PCG64 (XSL-RR 128/64) seeded from those words as numpy's pcg64_set_seed; 32-bit draws
//      split a 64-bit output, low half first (numpy's pcg64_next32).
//   3. Lemire's bounded integers on the 32-bit draws (numpy's buffered_bounded_lemire_uint32).
// Each draw counts into the resample's row of ``counts``; tests/test_resampling.py checks the
// counts against NumPy's own draws.
//
// Below them: the sums of resampled rows (resample_sums), and NumPy's legacy RandomState stream
// (MT19937) with its bounded integers and np.mean's summation order, for rouge-score's bootstrap.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "dense.hpp"  // the SIMD paths (TM_TARGET_BEGIN, the path in use)
#include "parallel.hpp"

namespace tmk {

namespace seedseq {
constexpr uint32_t INIT_A = 0x43b0d7e5u, MULT_A = 0x931e8875u, INIT_B = 0x8b51f9ddu, MULT_B = 0x58f38dedu;
constexpr uint32_t MIX_L = 0xca01f9ddu, MIX_R = 0x4973f715u;
constexpr int POOL = 4;

static inline uint32_t hashmix(uint32_t v, uint32_t& h) {
  v ^= h;
  h *= MULT_A;
  v *= h;
  return v ^ (v >> 16);
}

static inline uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = MIX_L * x - MIX_R * y;
  return r ^ (r >> 16);
}

// generate_state(4, uint64) of a SeedSequence whose assembled entropy is e[0..n).
static inline void state_words(const uint32_t* e, int64_t n, uint64_t out[4]) {
  uint32_t pool[POOL], h = INIT_A;
  for (int i = 0; i < POOL; ++i) pool[i] = hashmix(i < n ? e[i] : 0u, h);
  for (int s = 0; s < POOL; ++s)
    for (int d = 0; d < POOL; ++d)
      if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], h));
  for (int64_t s = POOL; s < n; ++s)
    for (int d = 0; d < POOL; ++d) pool[d] = mix(pool[d], hashmix(e[s], h));
  uint32_t w[8], g = INIT_B;
  for (int i = 0; i < 8; ++i) {
    uint32_t v = pool[i % POOL] ^ g;
    g *= MULT_B;
    v *= g;
    w[i] = v ^ (v >> 16);
  }
  for (int i = 0; i < 4; ++i) out[i] = (uint64_t)w[2 * i] | ((uint64_t)w[2 * i + 1] << 32);
}
}  // namespace seedseq

struct Pcg64 {
  using u128 = unsigned __int128;
  static constexpr u128 MULT = ((u128)2549297995355413924ULL << 64) + 4865540595714422341ULL;
  u128 state = 0, inc = 0;
  bool has32 = false;
  uint32_t half = 0;

  explicit Pcg64(const uint64_t w[4]) {  // pcg64_set_seed(seed = w[0..1], inc = w[2..3]), high word first
    const u128 seed = ((u128)w[0] << 64) | w[1], seq = ((u128)w[2] << 64) | w[3];
    inc = (seq << 1) | 1u;
    step();
    state += seed;
    step();
  }
  void step() { state = state * MULT + inc; }
  uint64_t next64() {
    step();
    const uint64_t x = (uint64_t)(state >> 64) ^ (uint64_t)state;
    const unsigned rot = (unsigned)(state >> 122);
    return (x >> rot) | (x << ((-rot) & 63u));
  }
  uint32_t next32() {
    if (has32) {
      has32 = false;
      return half;
    }
    const uint64_t v = next64();
    has32 = true;
    half = (uint32_t)(v >> 32);
    return (uint32_t)v;
  }
  // An integer in [0, rng]: rng == 0 draws nothing, rng == 2^32 - 1 a plain word, else Lemire.
  uint32_t bounded(uint32_t rng) {
    if (rng == 0) return 0;
    if (rng == 0xFFFFFFFFu) return next32();
    const uint32_t excl = rng + 1;
    uint64_t m = (uint64_t)next32() * excl;
    uint32_t left = (uint32_t)m;
    if (left < excl) {
      const uint32_t threshold = (0xFFFFFFFFu - rng) % excl;
      while (left < threshold) {
        m = (uint64_t)next32() * excl;
        left = (uint32_t)m;
      }
    }
    return (uint32_t)(m >> 32);
  }
};

// counts[r * n + i] += how often resample r0 + r drew item i (n draws in [0, n), 1 <= n <= 2^32);
// ``counts`` zeroed by the caller. ``entropy`` holds SeedSequence(seed).entropy as uint32 words.
static inline void bootstrap_counts(const uint32_t* entropy, int64_t n_entropy, int64_t r0, int64_t count, int64_t n,
                                    int32_t* counts, int nthreads) {
  const int64_t run = n_entropy < seedseq::POOL ? seedseq::POOL : n_entropy;  // a spawned child pads
  tmthreads::parallel_for(
      count, 1, nthreads, [&] { return std::vector<uint32_t>(run + 2, 0u); },
      [&](std::vector<uint32_t>& e, int64_t r) {
        for (int64_t i = 0; i < n_entropy; ++i) e[i] = entropy[i];
        const uint64_t key = (uint64_t)(r0 + r);  // the spawn key (r0 + r,) as uint32 words, low first
        int64_t len = run;
        e[len++] = (uint32_t)key;
        if (key >> 32) e[len++] = (uint32_t)(key >> 32);
        uint64_t w[4];
        seedseq::state_words(e.data(), len, w);
        Pcg64 g(w);
        int32_t* c = counts + r * n;
        const uint32_t rng = (uint32_t)(n - 1);
        // Past the L2 the increments are one cache miss after another, so there each draw's counter is
        // prefetched AHEAD draws early; counts that stay in cache go without (there the ring costs more than
        // it saves). Same draws, same order of increments: the same counts. (docs/performance.md, "Measurements
        // behind the kernels".)
        constexpr int AHEAD = 64;
        if (n < (1 << 16)) {
          for (int64_t j = 0; j < n; ++j) ++c[g.bounded(rng)];
        } else {
          uint32_t ring[AHEAD];
          for (int j = 0; j < AHEAD; ++j) {
            ring[j] = g.bounded(rng);
            __builtin_prefetch(c + ring[j], 1);
          }
          for (int64_t j = 0; j < n; ++j) {
            const uint32_t d = ring[j % AHEAD];
            if (j + AHEAD < n) {
              const uint32_t next = g.bounded(rng);
              ring[j % AHEAD] = next;
              __builtin_prefetch(c + next, 1);
            }
            ++c[d];
          }
        }
        tmthreads::tick(n);
      },
      "resample");
}

// o[q] = sum over j of s[d[j] * k + q], q < M, in float32 in j order; M fixed so that the sums stay in
// registers (a runtime column count kept them in memory: one store-to-load chain per draw).
template <int M> static void gather_sums(const uint32_t* d, int64_t n, const float* s, int64_t k, float* o) {
  float acc[M] = {};
  for (int64_t j = 0; j < n; ++j) {
    const float* row = s + (int64_t)d[j] * k;
    for (int q = 0; q < M; ++q) acc[q] += row[q];
  }
  for (int q = 0; q < M; ++q) o[q] = acc[q];
}

using GatherSums = void (*)(const uint32_t*, int64_t, const float*, int64_t, float*);
static constexpr GatherSums SUMS[8] = {gather_sums<1>, gather_sums<2>, gather_sums<3>, gather_sums<4>,
                                       gather_sums<5>, gather_sums<6>, gather_sums<7>, gather_sums<8>};

// sacrebleu's --confidence / --paired-bs resampling: idx = default_rng(seed).choice(n, (N, n)), one
// stream (Generator.integers(0, n, dtype=int64): Lemire on 32-bit draws for n <= 2^32), then
// out[r] = stats[idx[r]].sum(0) in float32, in draw order (NumPy's axis-0 sum of a C-ordered array
// adds row after row). ``entropy``: SeedSequence(seed).entropy as uint32 words; ``out`` zeroed.
static inline void sacrebleu_sums(const uint32_t* entropy, int64_t n_entropy, int64_t N, int64_t n, int64_t k,
                                  const float* stats, float* out, int nthreads) {
  uint64_t w[4];
  seedseq::state_words(entropy, n_entropy, w);  // not spawned: no padding
  Pcg64 g(w);
  const uint32_t rng = (uint32_t)(n - 1);
  // The draws are one sequence; they fill a buffer of about 2^20 indices, whose resamples are then
  // summed in parallel (a buffer of all N x n would cost more in page faults than the draws).
  const int64_t per = std::max<int64_t>(1, std::min<int64_t>(N, ((int64_t)1 << 20) / n));
  std::unique_ptr<uint32_t[]> buf(new uint32_t[(size_t)(per * n)]);
  for (int64_t r0 = 0; r0 < N; r0 += per) {
    const int64_t cnt = std::min(per, N - r0);
    uint32_t* __restrict d = buf.get();  // g's state stays in registers
    for (int64_t i = 0; i < cnt * n; ++i) d[i] = g.bounded(rng);
    tmthreads::parallel_for(
        cnt, 1, nthreads, [] { return 0; },
        [&](int, int64_t r) {
          for (int64_t q0 = 0; q0 < k; q0 += 8)
            SUMS[std::min<int64_t>(8, k - q0) - 1](buf.get() + r * n, n, stats + q0, k, out + (r0 + r) * k + q0);
          tmthreads::tick(n * k);
        },
        "resample");
  }
}

// ---------------------------------------------------------------- sums of resampled rows
// out[r, q] = sum over items i of counts[r, i] * cols[q, i]: ``cols`` holds the rows transposed
// (statistics, items), ``counts`` how often resample r drew each item (bootstrap_counts). A parallel item
// is a group of resamples; a run of SUB items of the columns stays in L1 while each resample of the group
// takes its share, up to QMAX statistics at once in registers.
namespace sums {
constexpr int64_t SUB = 512;
constexpr int64_t BLOCKS = 16;
constexpr int QMAX = 8;

// Integer sums are exact (mod 2^64, as int64 wraps), so any order gives the same numbers. A run goes in
// 32-bit lanes, twice as many as 64-bit ones and no widening, when no partial sum can pass 2^31 - 1:
// run length x largest |count| x largest |value| below that.
template <int Q, class Acc, class T>
static TM_INLINE void dot_int(const int32_t* c, const T* x, int64_t ld, int64_t L, int64_t* o) {
  Acc a[Q] = {};  // unsigned: wrapping, no overflow to assume away
  for (int64_t j = 0; j < L; ++j) {
    const Acc cj = (Acc)c[j];
    for (int q = 0; q < Q; ++q) a[q] += cj * (Acc)x[q * ld + j];
  }
  for (int q = 0; q < Q; ++q) o[q] = (int64_t)((uint64_t)o[q] + (uint64_t)(int64_t)(std::make_signed_t<Acc>)a[q]);
}

// Float sums keep Numba's order, so their bits do not depend on the thread count or the path: items split
// into BLOCKS fixed blocks, each summed from +0.0 in item order (o[q] carries a block's sum from run to
// run), then the blocks added in block order. Items drawn 0 times add 0 (not 0 * inf = NaN). The Q sums
// are Q independent chains: their adds overlap, where a single chain waits on each add.
template <int Q> static TM_INLINE void dot_f64(const int32_t* c, const double* x, int64_t ld, int64_t L, double* o) {
  double a[Q];
  for (int q = 0; q < Q; ++q) a[q] = o[q];
  for (int64_t j = 0; j < L; ++j) {
    const double cd = (double)c[j];
    // x, or +0.0 where the count is 0, by a bit mask: GCC made `c ? x : 0.0` a branch, mispredicted on
    // every other item of a bootstrap's counts
    const uint64_t keep = 0 - (uint64_t)(c[j] != 0);
    for (int q = 0; q < Q; ++q) {
      uint64_t b;
      std::memcpy(&b, x + q * ld + j, 8);
      b &= keep;
      double v;
      std::memcpy(&v, &b, 8);
      a[q] += cd * v;
    }
  }
  for (int q = 0; q < Q; ++q) o[q] = a[q];
}

// K::run<q>(args...) for q in 1..QMAX: the statistics of a tile as a template argument (always inlined, so
// that the code takes the SIMD path's target attributes of the function it lands in).
template <class K, class... A> static TM_INLINE void with_q(int64_t q, A... a) {
  switch (q) {
    case 1: K::template run<1>(a...); break;
    case 2: K::template run<2>(a...); break;
    case 3: K::template run<3>(a...); break;
    case 4: K::template run<4>(a...); break;
    case 5: K::template run<5>(a...); break;
    case 6: K::template run<6>(a...); break;
    case 7: K::template run<7>(a...); break;
    default: K::template run<8>(a...); break;
  }
}
struct IntTile {
  template <int Q, class T>
  static TM_INLINE void run(bool narrow, const int32_t* c, const T* x, int64_t ld, int64_t L, int64_t* o) {
    if (narrow)
      dot_int<Q, uint32_t>(c, x, ld, L, o);
    else
      dot_int<Q, uint64_t>(c, x, ld, L, o);
  }
};
struct FloatTile {
  template <int Q> static TM_INLINE void run(const int32_t* c, const double* x, int64_t ld, int64_t L, double* o) {
    dot_f64<Q>(c, x, ld, L, o);
  }
};

static TM_INLINE uint32_t max_abs(const int32_t* x, int64_t n) {
  int32_t hi = 0, lo = 0;
  for (int64_t i = 0; i < n; ++i) {
    hi = std::max(hi, x[i]);
    lo = std::min(lo, x[i]);
  }
  return std::max((uint32_t)hi, 0u - (uint32_t)lo);
}

// Up to QMAX statistics at a time, in equal tiles (10 as 5 + 5, not 8 + 2: one pass less over a count row).
static inline int64_t tile(int64_t k) {
  const int64_t tiles = (k + QMAX - 1) / QMAX;
  return (k + tiles - 1) / tiles;
}

// Resamples a parallel item: enough items to spread over the threads, few enough that the columns are not
// read again for each handful of resamples.
static inline int64_t group(int64_t R, int nthreads) {
  return std::max<int64_t>(1, std::min<int64_t>(16, R / (8 * (int64_t)std::max(1, nthreads))));
}
// Resamples r0..r1 of integer columns (int32: xmax = their largest |value|; int64) into out, int64.
template <class T> static TM_INLINE void int_group(const T* cols, int64_t k, int64_t n, const int32_t* counts,
                                                   int64_t r0, int64_t r1, int64_t* out, uint32_t xmax) {
  const int64_t Q = tile(k);
  std::fill(out + r0 * k, out + r1 * k, (int64_t)0);
  for (int64_t s = 0; s < n; s += SUB) {
    const int64_t L = std::min(SUB, n - s);
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t* c = counts + r * n + s;
      bool narrow = false;
      if constexpr (std::is_same_v<T, int32_t>) {
        const uint64_t cmax = max_abs(c, L);  // <= 2^31, L <= 512: no overflow below
        narrow = cmax == 0 || xmax <= 0x7FFFFFFFu / (cmax * (uint64_t)L);
      }
      for (int64_t q0 = 0; q0 < k; q0 += Q)
        with_q<IntTile>(std::min(Q, k - q0), narrow, c, cols + q0 * n + s, n, L, out + r * k + q0);
    }
    tmthreads::tick((r1 - r0) * L * k);
  }
}

// Resamples r0..r1 of float columns into out; part: (r1 - r0) * k doubles of scratch.
static TM_INLINE void float_group(const double* cols, int64_t k, int64_t n, const int32_t* counts, int64_t r0,
                                  int64_t r1, double* out, double* part) {
  const int64_t Q = tile(k), step = (n + BLOCKS - 1) / BLOCKS;
  for (int64_t b = 0; b < BLOCKS; ++b) {
    std::fill(part, part + (r1 - r0) * k, 0.0);
    const int64_t hi = std::min(n, (b + 1) * step);
    for (int64_t s = b * step; s < hi; s += SUB) {
      const int64_t L = std::min(SUB, hi - s);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t q0 = 0; q0 < k; q0 += Q)
          with_q<FloatTile>(std::min(Q, k - q0), counts + r * n + s, cols + q0 * n + s, n, L, part + (r - r0) * k + q0);
      tmthreads::tick((r1 - r0) * L * k);
    }
    for (int64_t i = 0; i < (r1 - r0) * k; ++i) out[r0 * k + i] = b == 0 ? part[i] : out[r0 * k + i] + part[i];
  }
}

}  // namespace sums

// ---------------------------------------------------------------- NumPy's legacy RandomState
// rouge-score's BootstrapAggregator draws np.random.choice(n, size=n) from the legacy global RandomState
// once per resample, and takes np.mean(matrix[idx, :], axis=0). Here the same MT19937 words come from the
// RandomState's own state (the Python side reads it and writes it back), NumPy's legacy bounded integers
// turn them into the same indices, and the means are summed in np.add.reduce's order, in parallel over
// resamples. From NumPy's random/src/mt19937/mt19937.[ch] and random_bounded_uint64_fill in
// random/src/distributions/distributions.c; tests/test_legacy_rng.py checks them against NumPy itself.
namespace legacy {
constexpr int N = 624, M = 397;
constexpr uint32_t MATRIX_A = 0x9908b0dfu, UPPER = 0x80000000u, LOWER = 0x7fffffffu;

// mt19937_gen: the twist of all 624 words, in place (the caller then reads from position 0).
static TM_INLINE void twist(uint32_t* key) {
  int i = 0;
  for (; i < N - M; ++i) {
    const uint32_t y = (key[i] & UPPER) | (key[i + 1] & LOWER);
    key[i] = key[i + M] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
  }
  for (; i < N - 1; ++i) {
    const uint32_t y = (key[i] & UPPER) | (key[i + 1] & LOWER);
    key[i] = key[i + (M - N)] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
  }
  const uint32_t y = (key[N - 1] & UPPER) | (key[0] & LOWER);
  key[N - 1] = key[M - 1] ^ (y >> 1) ^ (-(y & 1u) & MATRIX_A);
}

static TM_INLINE uint32_t temper(uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

// The smallest 2^b - 1 >= rng (NumPy's gen_mask).
static inline uint64_t mask_of(uint64_t rng) {
  for (int s = 1; s < 64; s *= 2) rng |= rng >> s;
  return rng;
}

// out[0..total) = buffered_bounded_masked_uint32 draws in [0, rng], 1 <= rng <= 2^32 - 1: a word & mask,
// rejected while > rng (rng = 2^32 - 1 masks nothing and rejects nothing: NumPy's plain next_uint32).
// NumPy twists lazily, when a word is wanted at position 624. Returns the new position.
template <class I>
static TM_INLINE int64_t fill_masked32(uint32_t* key, int64_t pos, uint32_t rng, I* out, int64_t total) {
  const uint32_t mask = (uint32_t)mask_of(rng);
  uint32_t buf[N];
  int64_t j = 0;
  int p0 = (int)pos;
  while (j < total) {
    if (p0 == N) {
      twist(key);
      p0 = 0;
    }
    for (int p = p0; p < N; ++p) buf[p] = temper(key[p]) & mask;  // the block's words at once: vectorized
    if (total - j >= N - p0) {
      // the output cannot fill up in this block: no end test, no branch on the draw (a rejected word is
      // written, then overwritten, as j does not advance)
      for (int p = p0; p < N; ++p) {
        const uint32_t v = buf[p];
        out[j] = (I)v;
        j += v <= rng;
      }
    } else {  // the last block: stop at the word that completes the output
      for (int p = p0; p < N; ++p) {
        const uint32_t v = buf[p];
        if (v <= rng) {
          out[j++] = (I)v;
          if (j == total) return p + 1;
        }
      }
    }
    p0 = N;
    tmthreads::tick(N);
  }
  return p0;
}

// bounded_masked_uint64 for 2^32 <= rng < 2^63: 64-bit words from mt19937_next64, whose first 32-bit word
// is the high half (as NumPy's build evaluates ``next << 32 | next``; the tests check it), masked, rejected
// while > rng.
static int64_t fill_masked64(uint32_t* key, int64_t pos, uint64_t rng, int64_t* out, int64_t total) {
  const uint64_t mask = mask_of(rng);
  int p = (int)pos;
  auto next = [&] {
    if (p == N) {
      twist(key);
      p = 0;
    }
    return temper(key[p++]);
  };
  for (int64_t j = 0; j < total; ++j) {
    uint64_t v;
    do {
      const uint64_t hi = next();
      v = ((hi << 32) | next()) & mask;
    } while (v > rng);
    out[j] = (int64_t)v;
    if ((j & 0xFFFF) == 0) tmthreads::tick(0x10000);
  }
  return p;
}

// NumPy's pairwise_sum_DOUBLE over rows[idx[0..n)] (one column): sequential below 8 terms; up to 128, 8
// accumulators combined as ((0+1)+(2+3))+((4+5)+(6+7)), then the rest in order; above, the sum of the two
// halves, the first rounded down to a multiple of 8.
template <class I> static double pairwise(const double* rows, const I* idx, int64_t n) {
  if (n < 8) {
    double res = 0.0;
    for (int64_t j = 0; j < n; ++j) res += rows[idx[j]];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int l = 0; l < 8; ++l) r[l] = rows[idx[l]];
    int64_t j = 8;
    for (; j < n - n % 8; j += 8)
      for (int l = 0; l < 8; ++l) r[l] += rows[idx[j + l]];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; j < n; ++j) res += rows[idx[j]];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(rows, idx, n2) + pairwise(rows, idx + n2, n - n2);
}

// Indices from the caller (ordered_means) are checked as they are read: each is folded into ``bad`` (x < 0
// and x > n - 1 both set the sign bit of x | (n - 1 - x)) and clamped into [0, n), so that the read stays
// inside the rows; a result with a bad index is thrown away. (A pass over all indices first would read them
// from memory twice.) Indices drawn here are trusted.
struct Checked {
  uint64_t last, bad = 0;
  explicit Checked(int64_t n) : last((uint64_t)(n - 1)) {}
  TM_INLINE uint64_t operator()(uint64_t x) {
    bad |= x | (last - x);
    return x < last ? x : last;
  }
  bool ok() const { return !(bad >> 63); }
};
struct Trusted {  // drawn here, in range
  TM_INLINE uint64_t operator()(uint64_t x) const { return x; }
  bool ok() const { return true; }
};

// out[t] = np.mean(rows[idx[t * k .. t * k + k)], axis=0) for t < T, rows (n, M), 2 <= M <= 8, as
// np.add.reduce sums the C-ordered (k, M) gather: each column from +0.0, row after row in draw order. The
// T * M sums are independent chains (one resample of rouge-score's M = 3 alone waits on each add), and
// column pairs go two lanes an add (the same adds) so that a row costs fewer loads.
template <int M, int T, class I, class C>
static TM_INLINE void gather_means(const double* rows, const I* idx, int64_t k, double* out, C& check) {
  typedef double D2 __attribute__((vector_size(16)));
  typedef double D2u __attribute__((vector_size(16), aligned(alignof(double)), may_alias));
  constexpr int P = M / 2;
  D2 a[T][P];
  double last[T];
  for (int t = 0; t < T; ++t) {
    for (int p = 0; p < P; ++p) a[t][p] = D2{0.0, 0.0};
    last[t] = 0.0;
  }
  for (int64_t j = 0; j < k; ++j)
    for (int t = 0; t < T; ++t) {
      const double* row = rows + check((uint64_t)(int64_t)idx[t * k + j]) * M;
      for (int p = 0; p < P; ++p) a[t][p] += *reinterpret_cast<const D2u*>(row + 2 * p);
      if (M % 2) last[t] += row[M - 1];
    }
  for (int t = 0; t < T; ++t) {
    for (int p = 0; p < P; ++p) {
      out[t * M + 2 * p] = a[t][p][0] / (double)k;
      out[t * M + 2 * p + 1] = a[t][p][1] / (double)k;
    }
    if (M % 2) out[t * M + M - 1] = last[t] / (double)k;
  }
}

template <int M, int T, class I, class C> static TM_INLINE void gather_range(const double* rows, const I* idx,
                                                                             int64_t k, int64_t s0, int64_t s1,
                                                                             double* out, C& check) {
  int64_t s = s0;
  for (; s + T <= s1; s += T) gather_means<M, T>(rows, idx + s * k, k, out + s * M, check);
  for (; s < s1; ++s) gather_means<M, 1>(rows, idx + s * k, k, out + s * M, check);
}

// out[s] = np.mean(rows[idx[s]], axis=0) for s in [s0, s1), idx (S, k), rows (n, m). m == 1: the gather is
// contiguous along the reduced axis and NumPy sums it pairwise; m >= 2 in draw order (m <= 8 in
// registers, T resamples at a time). Each resample's numbers are its own: the same on any thread count.
template <class I, class C> static TM_INLINE void means_range(const double* rows, int64_t m, const I* idx, int64_t k,
                                                              int64_t s0, int64_t s1, double* out, C& check) {
  switch (m) {
    case 2: return gather_range<2, 4>(rows, idx, k, s0, s1, out, check);
    case 3: return gather_range<3, 4>(rows, idx, k, s0, s1, out, check);
    case 4: return gather_range<4, 2>(rows, idx, k, s0, s1, out, check);
    case 5: return gather_range<5, 2>(rows, idx, k, s0, s1, out, check);
    case 6: return gather_range<6, 2>(rows, idx, k, s0, s1, out, check);
    case 7: return gather_range<7, 1>(rows, idx, k, s0, s1, out, check);
    case 8: return gather_range<8, 1>(rows, idx, k, s0, s1, out, check);
    default: break;
  }
  if (m == 1) {  // the pairwise sum reads as it goes: check the resample's indices first
    for (int64_t s = s0; s < s1; ++s) {
      for (int64_t j = 0; j < k; ++j) check((uint64_t)(int64_t)idx[s * k + j]);
      if (!check.ok()) return;
      out[s] = (0.0 + pairwise(rows, idx + s * k, k)) / (double)k;
    }
    return;
  }
  for (int64_t s = s0; s < s1; ++s) {
    double* o = out + s * m;
    std::fill(o, o + m, 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const double* row = rows + check((uint64_t)(int64_t)idx[s * k + j]) * m;
      for (int64_t q = 0; q < m; ++q) o[q] += row[q];
    }
    for (int64_t q = 0; q < m; ++q) o[q] /= (double)k;
  }
}
}  // namespace legacy

// ---------------------------------------------------------------- the SIMD paths
// The loops above compiled once per path of dense.hpp, with its target attributes (they are all inlined
// into these functions); the path in use is dense.hpp's, chosen by the bindings before any kernel runs.
namespace rpath {
struct Path {
  void (*sums_i32)(const int32_t*, int64_t, int64_t, const int32_t*, int64_t, int64_t, int64_t*, uint32_t);
  void (*sums_i64)(const int64_t*, int64_t, int64_t, const int32_t*, int64_t, int64_t, int64_t*, uint32_t);
  void (*sums_f64)(const double*, int64_t, int64_t, const int32_t*, int64_t, int64_t, double*, double*);
  int64_t (*fill_u32)(uint32_t*, int64_t, uint32_t, uint32_t*, int64_t);
  int64_t (*fill_i64)(uint32_t*, int64_t, uint32_t, int64_t*, int64_t);
  void (*means_u32)(const double*, int64_t, const uint32_t*, int64_t, int64_t, int64_t, double*);
  bool (*means_i64)(const double*, int64_t, const int64_t*, int64_t, int64_t, int64_t, double*, int64_t);
};
#define TM_RESAMPLE_PATH(NS)                                                                                         \
  namespace NS {                                                                                                     \
  static void sums_i32(const int32_t* x, int64_t k, int64_t n, const int32_t* c, int64_t r0, int64_t r1, int64_t* o, \
                       uint32_t xmax) {                                                                              \
    sums::int_group(x, k, n, c, r0, r1, o, xmax);                                                                    \
  }                                                                                                                  \
  static void sums_i64(const int64_t* x, int64_t k, int64_t n, const int32_t* c, int64_t r0, int64_t r1, int64_t* o, \
                       uint32_t xmax) {                                                                              \
    sums::int_group(x, k, n, c, r0, r1, o, xmax);                                                                    \
  }                                                                                                                  \
  static void sums_f64(const double* x, int64_t k, int64_t n, const int32_t* c, int64_t r0, int64_t r1, double* o,   \
                       double* part) {                                                                               \
    sums::float_group(x, k, n, c, r0, r1, o, part);                                                                  \
  }                                                                                                                  \
  static int64_t fill_u32(uint32_t* key, int64_t pos, uint32_t rng, uint32_t* out, int64_t total) {                  \
    return legacy::fill_masked32(key, pos, rng, out, total);                                                         \
  }                                                                                                                  \
  static int64_t fill_i64(uint32_t* key, int64_t pos, uint32_t rng, int64_t* out, int64_t total) {                   \
    return legacy::fill_masked32(key, pos, rng, out, total);                                                         \
  }                                                                                                                  \
  static void means_u32(const double* rows, int64_t m, const uint32_t* idx, int64_t k, int64_t s0, int64_t s1,       \
                        double* out) {                                                                               \
    legacy::Trusted trusted;                                                                                         \
    legacy::means_range(rows, m, idx, k, s0, s1, out, trusted);                                                      \
  }                                                                                                                  \
  static bool means_i64(const double* rows, int64_t m, const int64_t* idx, int64_t k, int64_t s0, int64_t s1,        \
                        double* out, int64_t n) {                                                                    \
    legacy::Checked checked(n);                                                                                      \
    legacy::means_range(rows, m, idx, k, s0, s1, out, checked);                                                      \
    return checked.ok();                                                                                             \
  }                                                                                                                  \
  static const Path path = {sums_i32, sums_i64, sums_f64, fill_u32, fill_i64, means_u32, means_i64};                 \
  }
#ifdef TM_X86
TM_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx2")
TM_RESAMPLE_PATH(avx512)
TM_TARGET_END
TM_TARGET_BEGIN("avx2")
TM_RESAMPLE_PATH(avx2)
TM_TARGET_END
#endif
TM_RESAMPLE_PATH(base)
#undef TM_RESAMPLE_PATH

static inline const Path& active() {
#ifdef TM_X86
  const Kernels* k = ::tmk::active.load();
  if (k == &::tmk::avx512::kernels) return avx512::path;
  if (k == &::tmk::avx2::kernels) return avx2::path;
#endif
  return base::path;
}
}  // namespace rpath

// ---------------------------------------------------------------- entry points (the bindings')

// out (R, k) = the sums of resampled rows, whole (no need to zero it): int32 or int64 columns give int64
// sums, float64 columns float64 sums in the fixed block order.
template <class T, class Out> static inline void resample_sums(const T* cols, int64_t k, int64_t n,
                                                               const int32_t* counts, int64_t R, Out* out,
                                                               int nthreads) {
  const rpath::Path& p = rpath::active();
  const int64_t G = sums::group(R, nthreads);
  uint32_t xmax = 0;  // int32 columns: their largest |value| bounds every product (a run's 32-bit lanes)
  if constexpr (std::is_same_v<T, int32_t>) xmax = sums::max_abs(cols, k * n);
  tmthreads::parallel_for((R + G - 1) / G, 1, nthreads,
                          [&] { return std::vector<double>(std::is_same_v<T, double> ? G * k : 0); },
                          [&](std::vector<double>& part, int64_t g) {
                            const int64_t r0 = g * G, r1 = std::min(R, r0 + G);
                            if constexpr (std::is_same_v<T, int32_t>)
                              p.sums_i32(cols, k, n, counts, r0, r1, out, xmax);
                            else if constexpr (std::is_same_v<T, int64_t>)
                              p.sums_i64(cols, k, n, counts, r0, r1, out, xmax);
                            else
                              p.sums_f64(cols, k, n, counts, r0, r1, out, part.data());
                          },
                          "resample");
}

// ``rs.randint(0, rng + 1, size=total)`` of a RandomState whose MT19937 state is (key, pos), into out
// (int64): random_bounded_uint64_fill(off=0, rng, use_masked=True). rng == 0 fills zeros and draws
// nothing, as NumPy. key is advanced in place; returns the new position. rng < 2^63, 0 <= pos <= 624.
static inline int64_t legacy_randint(uint32_t* key, int64_t pos, uint64_t rng, int64_t* out, int64_t total) {
  if (rng == 0) {
    std::fill(out, out + total, (int64_t)0);
    return pos;
  }
  if (rng <= 0xFFFFFFFFu) return rpath::active().fill_i64(key, pos, (uint32_t)rng, out, total);
  return legacy::fill_masked64(key, pos, rng, out, total);
}

// Resamples a parallel item of ordered_means.
constexpr int64_t MEANS_CHUNK = 16;

// out[s] = np.mean(rows[idx[s]], axis=0) for s < S: idx (S, k), rows (n, m). An index outside [0, n) is
// an invalid_argument (ValueError), found before it is read (means_range).
static inline void legacy_ordered_means(const double* rows, int64_t n, int64_t m, const int64_t* idx, int64_t S,
                                        int64_t k, double* out, int nthreads) {
  const rpath::Path& p = rpath::active();
  if (n < 1 && S * k > 0) throw std::invalid_argument("indices must lie in [0, 0): no rows");
  tmthreads::parallel_for((S + MEANS_CHUNK - 1) / MEANS_CHUNK, 1, nthreads, [] { return 0; },
                          [&](int, int64_t c) {
                            const int64_t s0 = c * MEANS_CHUNK, s1 = std::min(S, s0 + MEANS_CHUNK);
                            if (!p.means_i64(rows, m, idx, k, s0, s1, out, n))
                              throw std::invalid_argument("indices must lie in [0, " + std::to_string(n) + ")");
                            tmthreads::tick((s1 - s0) * k * m);
                          },
                          "resample");
}

// rouge-score's resample means: for s < S, out[s] = np.mean(rows[rs.randint(0, n, size=n)], axis=0)
// (rows (n, m)), the draws continuing (key, pos) as legacy_randint; returns the new position.
// One parallel loop over batches of ``per`` resamples: a thread draws its batch's indices (uint32 while
// n <= 2^32) into its own buffer when the batch before has been drawn (the stream is one sequence), then
// takes the batch's means while the next thread draws. Drawing everything first and then taking the
// means in parallel left the other threads idle during the draws, and paid a fork-join per batch (which
// a busy machine's scheduler can stretch to milliseconds).
static inline int64_t legacy_bootstrap_means(uint32_t* key, int64_t pos, const double* rows, int64_t n, int64_t m,
                                             int64_t S, int64_t per, double* out, int nthreads) {
  const rpath::Path& p = rpath::active();
  const uint64_t rng = (uint64_t)(n - 1);
  std::atomic<int64_t> drawn{0};  // batches drawn so far; key and pos are handed on with it
  auto batches = [&](auto zero) {
    using I = decltype(zero);
    tmthreads::parallel_for((S + per - 1) / per, 1, nthreads,
                            [&] { return std::vector<I>((size_t)(std::min(per, S) * n)); },
                            [&](std::vector<I>& buf, int64_t b) {
                              const int64_t s0 = b * per, cnt = std::min(per, S - s0);
                              // batches are handed out in order, so the one drawing before this one is already at work; a failure
                              // there stops the loop, and checkpoint() then ends this wait too
                              while (drawn.load(std::memory_order_acquire) != b) {
                                tmthreads::checkpoint();
                                std::this_thread::yield();
                              }
                              if (rng == 0)
                                std::fill(buf.begin(), buf.begin() + cnt * n, I(0));
                              else if constexpr (std::is_same_v<I, uint32_t>)
                                pos = p.fill_u32(key, pos, (uint32_t)rng, buf.data(), cnt * n);
                              else
                                pos = legacy::fill_masked64(key, pos, rng, buf.data(), cnt * n);
                              drawn.store(b + 1, std::memory_order_release);
                              if (!m) return;
                              if constexpr (std::is_same_v<I, uint32_t>)
                                p.means_u32(rows, m, buf.data(), n, 0, cnt, out + s0 * m);
                              else
                                p.means_i64(rows, m, buf.data(), n, 0, cnt, out + s0 * m, n);
                              tmthreads::tick(cnt * n * m);
                            },
                            "resample");
  };
  if (rng <= 0xFFFFFFFFu)
    batches(uint32_t(0));
  else
    batches(int64_t(0));
  return pos;
}

}  // namespace tmk
