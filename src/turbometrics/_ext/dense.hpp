// Row kernels over (B, T, V) arrays whose last axis is contiguous: fused
// log-softmax + gather (token NLL) and partial top-k selection.
//
// Row (b, t) starts at base + b*sb + t*st bytes. The Python layer validates
// shapes, strides, dtypes and target ranges before anything here runs; these
// functions do no checking of their own.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

// Per-row workers are cloned for AVX-512 and AVX2 and picked at load time, so
// one portable build runs near native speed (a wheel must not assume -march).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TM_CLONES
#endif

// Everything a clone calls must be inlined into it to be compiled for its ISA.
#define TM_INLINE inline __attribute__((always_inline))

namespace tmk {

enum Code : int { F16 = 0, BF16 = 1, F32 = 2, F64 = 3, I8 = 4, I16 = 5, I32 = 6, I64 = 7,
                  U8 = 8, U16 = 9, U32 = 10, U64 = 11 };

struct Rows {
  const char* base;
  int64_t B, T, sb, st, V;
  const char* row(int64_t r) const { return base + (r / T) * sb + (r % T) * st; }
};

static TM_INLINE float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static TM_INLINE uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// IEEE half -> float, exact for every input (normals, subnormals, inf, NaN),
// branch-free so that it vectorizes.
static TM_INLINE float f16_to_f32(uint16_t h) {
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
  uint32_t u = f32_bits(bits_f32(em) * 5.192296858534828e+33f);  // * 2^112 rebiases
  u |= (em >= (0x7c00u << 13)) ? 0x7f800000u : 0u;                // inf / NaN
  return bits_f32(u | ((uint32_t)(h & 0x8000u) << 16));
}
static TM_INLINE float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

// Loaders: the element type in memory and the type it is compared/summed in.
struct LoadF16 { using S = uint16_t; using K = float; static TM_INLINE K get(S s) { return f16_to_f32(s); } };
struct LoadBF16 { using S = uint16_t; using K = float; static TM_INLINE K get(S s) { return bf16_to_f32(s); } };
template <class T> struct LoadId { using S = T; using K = T; static TM_INLINE K get(S s) { return s; } };

// ---------------------------------------------------------------- exp
// GCC/Clang vector extensions: 64-byte vectors (one AVX-512 register, two AVX2
// or four SSE ones). Written out explicitly because the auto-vectorizer turns
// lane arrays into scalar registers; explicit lanes also give the same sum
// bits on every ISA and thread count.
template <class K> struct Vec;
template <> struct Vec<float> {
  typedef float V __attribute__((vector_size(64)));
  typedef int32_t I __attribute__((vector_size(64)));
};
template <> struct Vec<double> {
  typedef double V __attribute__((vector_size(64)));
  typedef int64_t I __attribute__((vector_size(64)));
};
template <class K> constexpr int LANES = 64 / sizeof(K);
template <class K> static TM_INLINE typename Vec<K>::V splat(K c) { return typename Vec<K>::V{} + c; }
template <class K> static TM_INLINE typename Vec<K>::V loadu(const K* p) {
  typename Vec<K>::V v; std::memcpy(&v, p, sizeof v); return v;
}

// e^x for x <= 0 (x = logit - block max), elementwise. Inputs below the clamp
// give about 1e-38 (f32) / 1e-308 (f64) instead of 0: the row sum is >= 1 (the
// max element contributes e^0), so this is invisible. NaN lanes come out as
// the clamp; rows holding NaN or +inf are flagged separately.
static TM_INLINE Vec<float>::V exp_le0(Vec<float>::V x) {
  typedef Vec<float>::V V; typedef Vec<float>::I I;
  x = x > -87.0f ? x : splat(-87.0f);
  V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = splat(1.9875691500e-4f);                                   // Cephes expf
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  I e = (__builtin_convertvector(n, I) + 127) << 23;
  return p * (V)e;
}
static TM_INLINE Vec<double>::V exp_le0(Vec<double>::V x) {
  typedef Vec<double>::V V; typedef Vec<double>::I I;
  x = x > -708.0 ? x : splat(-708.0);
  V n = (x * 1.4426950408889634074 + 6755399441055744.0) - 6755399441055744.0;
  V r = x - n * 6.93145751953125e-1;
  r = r - n * 1.42860682030941723212e-6;
  // Taylor series to degree 13: truncation < 1e-17 on |r| <= ln2/2.
  V p = splat(1.0 / 6227020800.0);
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r * r + r + 1.0;
  I e = (__builtin_convertvector(n, I) + 1023) << 52;
  return p * (V)e;
}

// ---------------------------------------------------------------- token NLL
// A block stays in L1 between its max pass and its exp-sum pass, so the row is
// read from memory once. n is a multiple of the lane count; the caller pads
// the last block with -inf (which adds exactly 0).
constexpr int BLOCK = 2048;

template <class K>
static TM_INLINE void block_lse(const K* p, int n, double& M, double& S, int& bad) {
  typedef typename Vec<K>::V V; typedef typename Vec<K>::I I;
  constexpr int W = LANES<K>;
  const K inf = std::numeric_limits<K>::infinity();
  V lm = splat(-inf);
  I lb = I{};
  for (int i = 0; i < n; i += W) {
    V v = loadu(p + i);
    lm = v > lm ? v : lm;
    lb |= (v < inf) == 0;  // NaN or +inf
  }
  K m = lm[0];
  int b = lb[0] != 0;
  for (int l = 1; l < W; ++l) { m = lm[l] > m ? lm[l] : m; b |= lb[l] != 0; }
  bad |= b;
  if (b || m == -inf) return;  // a block of -inf adds exactly 0
  V ls = V{};
  for (int i = 0; i < n; i += W) ls += exp_le0(loadu(p + i) - m);
  double s = 0.0;
  for (int l = 0; l < W; ++l) s += (double)ls[l];
  double dm = (double)m;
  if (dm > M) { S = S * std::exp(M - dm) + s; M = dm; }
  else S += s * std::exp(dm - M);
}

template <class L>
static TM_INLINE double row_nll(const char* row, int64_t V, int64_t target) {
  using S = typename L::S; using K = typename L::K;
  constexpr int W = LANES<K>;
  const S* x = reinterpret_cast<const S*>(row);
  double M = -std::numeric_limits<double>::infinity(), S_ = 0.0;
  int bad = 0;
  alignas(64) K buf[BLOCK];
  for (int64_t j = 0; j < V; j += BLOCK) {
    int n = (int)std::min<int64_t>(BLOCK, V - j);
    int padded = (n + W - 1) / W * W;
    const K* p = buf;
    if constexpr (std::is_same_v<S, K>) {
      if (n == padded) p = x + j;
      else std::memcpy(buf, x + j, n * sizeof(K));
    } else {
      for (int i = 0; i < n; ++i) buf[i] = L::get(x[j + i]);
    }
    for (int i = n; i < padded; ++i) buf[i] = -std::numeric_limits<K>::infinity();
    block_lse<K>(p, padded, M, S_, bad);
  }
  if (bad) return std::numeric_limits<double>::quiet_NaN();
  return (M + std::log(S_)) - (double)L::get(x[target]);
}

TM_CLONES static double row_nll_f16(const char* r, int64_t V, int64_t t) { return row_nll<LoadF16>(r, V, t); }
TM_CLONES static double row_nll_bf16(const char* r, int64_t V, int64_t t) { return row_nll<LoadBF16>(r, V, t); }
TM_CLONES static double row_nll_f32(const char* r, int64_t V, int64_t t) { return row_nll<LoadId<float>>(r, V, t); }
TM_CLONES static double row_nll_f64(const char* r, int64_t V, int64_t t) { return row_nll<LoadId<double>>(r, V, t); }

// out[r] = logsumexp(row r) - row r[targets[r]]; rows with a negative target are skipped (0).
static inline void nll_rows(const Rows x, int code, const int64_t* targets, double* out, int nthreads) {
  double (*fn)(const char*, int64_t, int64_t) =
      code == F16 ? row_nll_f16 : code == BF16 ? row_nll_bf16 : code == F32 ? row_nll_f32 : row_nll_f64;
  const int64_t N = x.B * x.T;
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthreads)
  for (int64_t r = 0; r < N; ++r)
    out[r] = targets[r] < 0 ? 0.0 : fn(x.row(r), x.V, targets[r]);
}

// ---------------------------------------------------------------- top-k
template <class K> struct Cand { K v; int64_t i; };
static_assert(sizeof(Cand<double>) == 16 && sizeof(Cand<int8_t>) == 16, "topk_rows sizes buffers for 16-byte candidates");

// Strict weak order "a ranks before b": value (NaN beyond every number, as
// torch.topk), then the lower index.
template <class K, bool LARGEST> struct Before {
  bool operator()(const Cand<K>& a, const Cand<K>& b) const {
    if constexpr (std::is_floating_point_v<K>) {
      bool an = a.v != a.v, bn = b.v != b.v;
      if (an | bn) return (an & bn) ? a.i < b.i : (LARGEST ? an : bn);
    }
    if (a.v != b.v) return LARGEST ? a.v > b.v : a.v < b.v;
    return a.i < b.i;
  }
};

// Could v displace the current k-th candidate? A superset test (NaN passes),
// refined by the exact order in nth_element. An equal value never passes:
// scanned later, it has a higher index than every kept one.
template <class K, bool LARGEST> static TM_INLINE int may_enter(K v, K thr) {
  if constexpr (std::is_floating_point_v<K>) return LARGEST ? !(v <= thr) : !(v >= thr);
  else return LARGEST ? v > thr : v < thr;
}

// Measured on (512, 128256) f32, k=50, one thread: SCAN 32 with a buffer of
// k + max(k, 64) runs at 45 us/row (a plain read: ~22 us); larger buffers
// raise the threshold too late (1024: 70 us/row).
constexpr int SCAN = 32;
constexpr int64_t SLACK = 64;

template <class L, bool LARGEST>
static TM_INLINE void row_topk(const char* row, int64_t V, int64_t k, bool sorted, Cand<typename L::K>* buf,
                     int64_t cap, char* out_v, int64_t* out_i) {
  using S = typename L::S; using K = typename L::K;
  const S* x = reinterpret_cast<const S*>(row);
  Before<K, LARGEST> before;
  // Seed with the first k; the threshold is the worst of the kept k.
  int64_t n = 0, i = 0;
  for (; i < k; ++i) buf[n++] = {L::get(x[i]), i};
  K thr = std::max_element(buf, buf + k, before)->v;
  auto compact = [&]() {
    std::nth_element(buf, buf + (k - 1), buf + n, before);
    n = k;
    thr = buf[k - 1].v;
  };
  for (; i + SCAN <= V; i += SCAN) {
    int any = 0;  // a plain OR-reduction: the vectorizer's bread and butter
    for (int l = 0; l < SCAN; ++l) any |= may_enter<K, LARGEST>(L::get(x[i + l]), thr);
    if (!any) continue;
    for (int l = 0; l < SCAN; ++l) {
      K v = L::get(x[i + l]);
      if (may_enter<K, LARGEST>(v, thr)) {
        buf[n++] = {v, i + l};
        if (n == cap) compact();
      }
    }
  }
  for (; i < V; ++i) {
    K v = L::get(x[i]);
    if (may_enter<K, LARGEST>(v, thr)) { buf[n++] = {v, i}; if (n == cap) compact(); }
  }
  if (n > k) std::nth_element(buf, buf + (k - 1), buf + n, before);
  if (sorted) std::sort(buf, buf + k, before);
  for (int64_t j = 0; j < k; ++j) {
    out_i[j] = buf[j].i;
    std::memcpy(out_v + j * sizeof(S), x + buf[j].i, sizeof(S));  // the stored bits, not K
  }
}

// One clone set per dtype and direction: the scan is the hot loop.
#define TM_TOPK_ROW(NAME, LOADER)                                                              \
  TM_CLONES static void NAME(const char* r, int64_t V, int64_t k, bool lg, bool so, void* buf, \
                             int64_t cap, char* v, int64_t* i) {                               \
    using C = Cand<typename LOADER::K>;                                                        \
    if (lg) row_topk<LOADER, true>(r, V, k, so, static_cast<C*>(buf), cap, v, i);              \
    else row_topk<LOADER, false>(r, V, k, so, static_cast<C*>(buf), cap, v, i);                \
  }
TM_TOPK_ROW(topk_row_f16, LoadF16)
TM_TOPK_ROW(topk_row_bf16, LoadBF16)
TM_TOPK_ROW(topk_row_f32, LoadId<float>)
TM_TOPK_ROW(topk_row_f64, LoadId<double>)
TM_TOPK_ROW(topk_row_i8, LoadId<int8_t>)
TM_TOPK_ROW(topk_row_i16, LoadId<int16_t>)
TM_TOPK_ROW(topk_row_i32, LoadId<int32_t>)
TM_TOPK_ROW(topk_row_i64, LoadId<int64_t>)
TM_TOPK_ROW(topk_row_u8, LoadId<uint8_t>)
TM_TOPK_ROW(topk_row_u16, LoadId<uint16_t>)
TM_TOPK_ROW(topk_row_u32, LoadId<uint32_t>)
TM_TOPK_ROW(topk_row_u64, LoadId<uint64_t>)
#undef TM_TOPK_ROW

// values: k elements of `itemsize` bytes per row; indices: k int64 per row.
static inline void topk_rows(const Rows x, int code, int64_t itemsize, int64_t k, bool largest,
                             bool sorted, char* out_v, int64_t* out_i, int nthreads) {
  typedef void (*RowFn)(const char*, int64_t, int64_t, bool, bool, void*, int64_t, char*, int64_t*);
  static const RowFn fns[] = {topk_row_f16, topk_row_bf16, topk_row_f32, topk_row_f64,
                              topk_row_i8,  topk_row_i16,  topk_row_i32, topk_row_i64,
                              topk_row_u8,  topk_row_u16,  topk_row_u32, topk_row_u64};
  const RowFn fn = fns[code];
  const int64_t N = x.B * x.T;
  const int64_t cap = k + std::max<int64_t>(k, SLACK);
  // Candidate = (value as K <= 8 bytes, int64 index): 16 bytes covers every K.
  const size_t cand_bytes = 16;
#pragma omp parallel num_threads(nthreads)
  {
    std::vector<unsigned char> buf((size_t)cap * cand_bytes);
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < N; ++r)
      fn(x.row(r), x.V, k, largest, sorted, buf.data(), cap, out_v + r * k * itemsize, out_i + r * k);
  }
}

}  // namespace tmk
