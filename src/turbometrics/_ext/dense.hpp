// Row kernels over (B, T, V) arrays whose last axis is contiguous, one SIMD
// path per register width, picked at run time.
//
// The kernels themselves are written once, in dense_kernels.hpp, and compiled
// here once per path with that path's target attributes: on x86-64 AVX-512
// (64-byte registers), AVX2 (32) and the x86-64 baseline (SSE2, 16); NEON (16)
// on aarch64; plain 16-byte vector code elsewhere. No -march: one build runs on
// every CPU of its architecture. Row (b, t) starts at base + b*sb + t*st bytes.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "cpu.hpp"
#include "parallel.hpp"

#define TM_INLINE inline __attribute__((always_inline))
#define TM_STR(x) #x
#if defined(__clang__)
#define TM_TARGET_BEGIN(T) _Pragma(TM_STR(clang attribute push(__attribute__((target(T))), apply_to = function)))
#define TM_TARGET_END _Pragma("clang attribute pop")
#else
#define TM_TARGET_BEGIN(T) _Pragma("GCC push_options") _Pragma(TM_STR(GCC target(T)))
#define TM_TARGET_END _Pragma("GCC pop_options")
#endif

namespace tmk {

enum Code : int {
  F16 = 0,
  BF16 = 1,
  F32 = 2,
  F64 = 3,
  I8 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  U8 = 8,
  U16 = 9,
  U32 = 10,
  U64 = 11
};

struct Rows {
  const char* base;
  int64_t B, T, sb, st, V;
  const char* row(int64_t r) const { return base + (r / T) * sb + (r % T) * st; }
};

typedef double (*NllFn)(const char* row, int64_t V, int64_t target);
typedef bool (*FoldFn)(const char* row, int64_t V, double& M, double& S);
typedef void (*TopkFn)(const char* row, int64_t V, int64_t k, bool largest, bool sorted, void* buf, int64_t cap,
                       char* out_v, int64_t* out_i);
typedef bool (*ScoreFn)(const char* row, int64_t V, int64_t v0, double& M, double& S, int64_t& arg);
typedef int64_t (*RankFn)(const char* row, int64_t V, int64_t target, bool before_ge, bool after_ge);
struct Kernels {
  const char* name;
  NllFn nll[4];      // by dtype code, floating point only
  FoldFn fold[4];    // by dtype code, floating point only
  ScoreFn score[4];  // by dtype code, floating point only
  TopkFn topk[12];   // by dtype code
  RankFn rank[12];   // by dtype code
};

static TM_INLINE float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static TM_INLINE uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// IEEE half -> float, exact for every input (normals, subnormals, inf, NaN),
// branch-free so that it vectorizes.
static TM_INLINE float f16_to_f32(uint16_t h) {
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
  uint32_t u = f32_bits(bits_f32(em) * 5.192296858534828e+33f);  // * 2^112 rebiases
  u |= (em >= (0x7c00u << 13)) ? 0x7f800000u : 0u;               // inf / NaN
  return bits_f32(u | ((uint32_t)(h & 0x8000u) << 16));
}
static TM_INLINE float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

// Loaders: the element type in memory and the type it is compared/summed in.
struct LoadF16 {
  using S = uint16_t;
  using K = float;
  static TM_INLINE K get(S s) { return f16_to_f32(s); }
};
struct LoadBF16 {
  using S = uint16_t;
  using K = float;
  static TM_INLINE K get(S s) { return bf16_to_f32(s); }
};
template <class T> struct LoadId {
  using S = T;
  using K = T;
  static TM_INLINE K get(S s) { return s; }
};
// A loader's values compared and summed in double (exact: every 16-bit or float32 value is a double).
template <class L> struct Wide {
  using S = typename L::S;
  using K = double;
  static TM_INLINE K get(S s) { return (double)L::get(s); }
};

// e^x of every 16-bit value x (65536 doubles, built on first use, shared by all
// paths): 16-bit logits need no exp at all, only a lookup and a double add.
template <class L> static const double* exp_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t u = 0; u < 65536; ++u) t[u] = std::exp((double)L::get((uint16_t)u));
    return t;
  }();
  return table.data();
}

// Sum of e^x over a row of 16-bit values from the table, in 8 double lanes (element i in lane i % 8)
// added in a fixed order. One function for every path, compiled here for the x86-64 baseline and never
// inlined into a path: scalar code either way, and the VEX form of an add from an indexed address
// (vaddsd (t,i,8), a, a) issues as two uops on Intel cores where SSE's addsd stays one.
__attribute__((noinline)) static double table_sum(const uint16_t* x, int64_t V, const double* table) {
  constexpr bool LITTLE = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;  // x[i] in a word's low bits
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 32 <= V; i += 32) {
    // The row 4 KB ahead: the table's L2 lookups keep the line-fill buffers busy, and without this the
    // row's own stream starved (same order of adds, same bits).
    __builtin_prefetch(x + i + 2048);
    for (int q = 0; q < 32; q += 8) {
      // Four values a 64-bit load, taken apart by shifts: a load per value besides the lookup's kept
      // the load ports busy.
      uint64_t w[2];
      std::memcpy(w, x + i + q, 16);
      for (int l = 0; l < 8; ++l) acc[l] += table[(w[l / 4] >> (16 * (LITTLE ? l % 4 : 3 - l % 4))) & 0xffff];
    }
  }
  for (; i + 8 <= V; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += table[x[i + l]];
  for (int l = 0; i < V; ++i, ++l) acc[l] += table[x[i]];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Top-k candidates and their strict weak order "a ranks before b": value (NaN
// beyond every number, as torch.topk), then the lower index.
template <class K> struct Cand {
  K v;
  int64_t i;
};
static_assert(sizeof(Cand<double>) == 16 && sizeof(Cand<int8_t>) == 16,
              "topk_rows sizes buffers for 16-byte candidates");
// a strictly before b by value alone: NaN first when largest, last otherwise.
template <class K, bool LARGEST> static TM_INLINE bool better(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    bool an = a != a, bn = b != b;
    if (an | bn) return LARGEST ? an & !bn : bn & !an;
  }
  return LARGEST ? a > b : a < b;
}
// The top-k order: by value (better), then the lower index.
template <class K, bool LARGEST> struct Before {
  bool operator()(const Cand<K>& a, const Cand<K>& b) const {
    if (better<K, LARGEST>(a.v, b.v)) return true;
    return !better<K, LARGEST>(b.v, a.v) && a.i < b.i;
  }
};

}  // namespace tmk

// ---------------------------------------------------------------- the paths, best first
#if defined(__x86_64__) || defined(_M_X64)
#define TM_X86 1
TM_TARGET_BEGIN("avx512f,avx512bw,avx512dq,avx512vl,avx2")
namespace tmk {
namespace avx512 {
#define TM_VEC_BYTES 64
#define TM_PATH_NAME "avx512"
#include "dense_kernels.hpp"
#undef TM_VEC_BYTES
#undef TM_PATH_NAME
}  // namespace avx512
}  // namespace tmk
TM_TARGET_END
TM_TARGET_BEGIN("avx2")
namespace tmk {
namespace avx2 {
#define TM_VEC_BYTES 32
#define TM_PATH_NAME "avx2"
#include "dense_kernels.hpp"
#undef TM_VEC_BYTES
#undef TM_PATH_NAME
}  // namespace avx2
}  // namespace tmk
TM_TARGET_END
#endif

namespace tmk {
namespace base {
#define TM_VEC_BYTES 16
#if defined(__aarch64__)
#define TM_PATH_NAME "neon"  // NEON is part of the aarch64 baseline
#else
#define TM_PATH_NAME "baseline"
#endif
#include "dense_kernels.hpp"
#undef TM_VEC_BYTES
#undef TM_PATH_NAME
}  // namespace base
}  // namespace tmk

namespace tmk {

#ifdef TM_X86
static const Kernels* const PATHS[] = {&avx512::kernels, &avx2::kernels, &base::kernels};
#else
static const Kernels* const PATHS[] = {&base::kernels};
#endif
static constexpr int N_PATHS = (int)(sizeof(PATHS) / sizeof(PATHS[0]));

// Can this CPU (and its OS, which must save the vector registers: cpu.hpp) run path i?
static inline bool path_supported(int i) {
#ifdef TM_X86
  if (PATHS[i] == &avx512::kernels) return tmcpu::features().avx512;
  if (PATHS[i] == &avx2::kernels) return tmcpu::features().avx2;
#endif
  return i >= 0 && i < N_PATHS;
}
static inline const char* path_name(int i) { return PATHS[i]->name; }

// The path in use; set once by the Python layer (which reads TURBOMETRICS_SIMD)
// before any kernel runs.
static std::atomic<const Kernels*> active{nullptr};
static inline void use_path(int i) { active.store(PATHS[i]); }

// Rows per chunk of the parallel loop: up to 16 short rows, down to one row from 8,192 values up,
// so that a few long rows (8 x 50,257) and small arrays (16 x 4,096) still spread over the threads; a
// chunk of 8,192 values is several times a thread's hand-off of work. Each row's result is its own: any
// chunking gives the same bits.
static inline int64_t row_chunk(int64_t V) { return std::max<int64_t>(1, std::min<int64_t>(16, 8192 / V)); }

// out[r] = logsumexp(row r) - row r[targets[r]]; rows with a negative target are skipped (0).
static inline void nll_rows(const Rows x, int code, const int64_t* targets, double* out, int nthreads) {
  const NllFn fn = active.load()->nll[code];
  tmthreads::parallel_for(
      x.B * x.T, row_chunk(x.V), nthreads, [] { return 0; },
      [&](int, int64_t r) { out[r] = targets[r] < 0 ? 0.0 : fn(x.row(r), x.V, targets[r]); });
}

// Fold each row r of x into its running log-sum-exp state (M[r], S[r]); bad[r] = 1 once a row held
// +inf or NaN (its state is then left alone).
static inline void fold_rows(const Rows x, int code, double* M, double* S, uint8_t* bad, int nthreads) {
  const FoldFn fn = active.load()->fold[code];
  tmthreads::parallel_for(
      x.B * x.T, row_chunk(x.V), nthreads, [] { return 0; },
      [&](int, int64_t r) {
        if (!bad[r] && !fn(x.row(r), x.V, M[r], S[r])) bad[r] = 1;
      });
}

// fold_rows with each row's first argmax: arg[r] becomes v0 + the index of the slice's first maximal value
// when that beats the row's max so far (-1 until a row has a value above -inf); all in double (score_row).
static inline void score_rows(const Rows x, int code, int64_t v0, double* M, double* S, uint8_t* bad, int64_t* arg,
                              int nthreads) {
  const ScoreFn fn = active.load()->score[code];
  tmthreads::parallel_for(
      x.B * x.T, row_chunk(x.V), nthreads, [] { return 0; },
      [&](int, int64_t r) {
        if (!bad[r] && !fn(x.row(r), x.V, v0, M[r], S[r], arg[r])) bad[r] = 1;
      });
}

// values: k elements of `itemsize` bytes per row; indices: k int64 per row.
static inline void topk_rows(const Rows x, int code, int64_t itemsize, int64_t k, bool largest, bool sorted,
                             char* out_v, int64_t* out_i, int nthreads) {
  const TopkFn fn = active.load()->topk[code];
  const int64_t cap = k + std::max<int64_t>(k, 64);  // candidate buffer: k + slack
  // A candidate is (value as K <= 8 bytes, int64 index): 16 bytes covers every K.
  tmthreads::parallel_for(
      x.B * x.T, row_chunk(x.V), nthreads, [&] { return std::vector<unsigned char>((size_t)cap * 16); },
      [&](std::vector<unsigned char>& buf, int64_t r) {
        fn(x.row(r), x.V, k, largest, sorted, buf.data(), cap, out_v + r * k * itemsize, out_i + r * k);
      });
}

// out[r] = the rank of row r's target: the classes ahead of it, ties counted on the sides the rule names;
// -1 for a negative target (an ignored row, not read). A target >= V is the caller's bug: an error, not a
// read outside the row.
static inline void rank_rows(const Rows x, int code, const int64_t* targets, bool before_ge, bool after_ge,
                             int64_t* out, int nthreads) {
  const RankFn fn = active.load()->rank[code];
  tmthreads::parallel_for(
      x.B * x.T, row_chunk(x.V), nthreads, [] { return 0; },
      [&](int, int64_t r) {
        const int64_t t = targets[r];
        if (t >= x.V) throw std::invalid_argument("target out of range");
        out[r] = t < 0 ? -1 : fn(x.row(r), x.V, t, before_ge, after_ge);
      },
      "row");
}

}  // namespace tmk
