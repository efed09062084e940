// Bootstrap draws in compiled code, number for number NumPy's.
//
// The default mode of tm.bootstrap_ci / tm.paired_test draws resample r from its own generator,
// default_rng(SeedSequence(seed).spawn(count)[r]).integers(0, n, n, dtype=np.uint32). Made one
// resample at a time in Python that costs ~30 us a resample (SeedSequence, PCG64, a call), more than
// the sums; here the same three steps run per resample in parallel:
//   1. SeedSequence: the entropy words, padded with zeros to the pool size (a spawned child), then
//      the spawn key's words, hashed into a pool of 4 words; generate_state(4, uint64) from the pool
//      (O'Neill's seed_seq alternative, as numpy/random/bit_generator.pyx).
//   2. PCG64 (XSL-RR 128/64) seeded from those words as numpy's pcg64_set_seed; 32-bit draws
//      split a 64-bit output, low half first (numpy's pcg64_next32).
//   3. Lemire's bounded integers on the 32-bit draws (numpy's buffered_bounded_lemire_uint32).
// Each draw counts into the resample's row of ``counts``; tests/test_resampling.py checks the
// counts against NumPy's own draws.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

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
static inline void bootstrap_counts(const uint32_t* entropy, int64_t n_entropy, int64_t r0, int64_t count,
                                    int64_t n, int32_t* counts, int nthreads) {
  const int64_t run = n_entropy < seedseq::POOL ? seedseq::POOL : n_entropy;  // a spawned child pads
  tmp::parallel_for(count, 1, nthreads, [&] { return std::vector<uint32_t>(run + 2, 0u); },
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
    // Past the L2 the increments were one cache miss after another (a million items: 4 MB of counts,
    // 3.0 ms a resample on an Intel Xeon), so there each draw's counter is prefetched AHEAD draws early
    // (1.4 ms); counts that stay in cache go without (the ring cost 30% at 3,000 items). Same draws, same
    // order of increments: the same counts.
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
    tmp::tick(n);
  }, "resample");
}

// o[q] = sum over j of s[d[j] * k + q], q < M, in float32 in j order; M fixed so that the sums stay in
// registers (a runtime column count kept them in memory: one store-to-load chain per draw, 5x slower).
template <int M>
static void gather_sums(const uint32_t* d, int64_t n, const float* s, int64_t k, float* o) {
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
    tmp::parallel_for(cnt, 1, nthreads, [] { return 0; }, [&](int, int64_t r) {
      for (int64_t q0 = 0; q0 < k; q0 += 8)
        SUMS[std::min<int64_t>(8, k - q0) - 1](buf.get() + r * n, n, stats + q0, k, out + (r0 + r) * k + q0);
      tmp::tick(n * k);
    }, "resample");
  }
}

}  // namespace tmk
