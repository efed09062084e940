// Dense row kernels, written once for any vector width: fused log-softmax +
// gather (token NLL), partial top-k selection and the rank of the target.
//
// dense.hpp includes this file once per SIMD path, inside that path's
// namespace (tmk::avx512, tmk::avx2, ...), with TM_VEC_BYTES set to the path's
// register width and its target attributes in force: each path gets code at
// its own width (GCC lowers wider generic vectors piece by piece, sometimes
// element by element). No include guard, on purpose; everything it needs is
// included by dense.hpp first. The Python layer validates shapes, strides,
// dtypes and target ranges before anything here runs.

constexpr int VB = TM_VEC_BYTES;

// ---------------------------------------------------------------- packs
// A pack is STEP bytes held in U registers of this path and processed in
// lockstep: U independent exp chains are in flight (the polynomial is a long
// dependency chain), and the logical lanes (32 floats, 16 doubles) are the same
// on every path, so sums have the same bits on every path and thread count.
constexpr int STEP = 128;
constexpr int U = STEP / VB;

template <class K> struct Vec;
template <> struct Vec<float> {
  typedef float V __attribute__((vector_size(VB)));
  typedef float Unaligned __attribute__((vector_size(VB), aligned(alignof(float)), may_alias));
  typedef uint32_t I __attribute__((vector_size(VB)));
};
template <> struct Vec<double> {
  typedef double V __attribute__((vector_size(VB)));
  typedef double Unaligned __attribute__((vector_size(VB), aligned(alignof(double)), may_alias));
  typedef uint64_t I __attribute__((vector_size(VB)));
};

template <class K> struct Pack {
  typedef typename Vec<K>::V V;
  static constexpr int LANES = STEP / (int)sizeof(K);  // logical lanes
  static constexpr int PER = VB / (int)sizeof(K);      // lanes per register
  V v[U];
};

#define TM_PACK_OP(OP)                                                                          \
  template <class K> static TM_INLINE Pack<K> operator OP(const Pack<K>& a, const Pack<K>& b) { \
    Pack<K> r;                                                                                  \
    for (int q = 0; q < U; ++q) r.v[q] = a.v[q] OP b.v[q];                                      \
    return r;                                                                                   \
  }                                                                                             \
  template <class K> static TM_INLINE Pack<K> operator OP(const Pack<K>& a, K b) {              \
    Pack<K> r;                                                                                  \
    for (int q = 0; q < U; ++q) r.v[q] = a.v[q] OP b;                                           \
    return r;                                                                                   \
  }
TM_PACK_OP(+)
TM_PACK_OP(-)
TM_PACK_OP(*)
#undef TM_PACK_OP

template <class K> static TM_INLINE Pack<K> splat(K c) {
  Pack<K> r;
  for (int q = 0; q < U; ++q) r.v[q] = typename Vec<K>::V{} + c;
  return r;
}
template <class K> static TM_INLINE Pack<K> load(const K* p) {
  Pack<K> r;  // register by register: one unaligned load each (a memcpy went through the stack)
  for (int q = 0; q < U; ++q) r.v[q] = *reinterpret_cast<const typename Vec<K>::Unaligned*>(p + q * Pack<K>::PER);
  return r;
}
// a > b ? a : b lane by lane (NaN in a is dropped), and the min likewise.
template <class K> static TM_INLINE Pack<K> vmax(const Pack<K>& a, const Pack<K>& b) {
  Pack<K> r;
  for (int q = 0; q < U; ++q) r.v[q] = a.v[q] > b.v[q] ? a.v[q] : b.v[q];
  return r;
}
template <class K> static TM_INLINE Pack<K> vmin(const Pack<K>& a, const Pack<K>& b) {
  Pack<K> r;
  for (int q = 0; q < U; ++q) r.v[q] = a.v[q] < b.v[q] ? a.v[q] : b.v[q];
  return r;
}
// Raise lanes below c to c; NaN stays NaN.
template <class K> static TM_INLINE Pack<K> floor_at(const Pack<K>& a, K c) {
  Pack<K> r;
  for (int q = 0; q < U; ++q) r.v[q] = a.v[q] < c ? typename Vec<K>::V{} + c : a.v[q];
  return r;
}

// ---------------------------------------------------------------- exp
// e^d for d <= 0 (d = logit - block max) and d >= LOW (callers clamp when a
// block reaches below). Only + - * (no FMA, and setup.py turns contraction
// off), so every path gives the same bits. NaN in, NaN out.
template <class K> struct Exp;
template <> struct Exp<float> {
  static constexpr float LOW = -87.0f;  // e^LOW is still a normal float
  // 2^t, t = d log2(e): t = n + f, |f| <= 1/2; 2^f by a degree-5 polynomial
  // (relative error 2.4e-7 with float rounding), 2^n built in the exponent bits.
  // The rounding constant 1.5*2^23 + 127 leaves n + 127 in big's low mantissa
  // bits, and shifting big's bits left by 23 drops everything else.
  // The polynomial goes in three independent pairs joined by f^2 and f^4
  // (Estrin), not Horner's one chain of ten: the loop is bound by latency, not
  // by the adders.
  static TM_INLINE Pack<float> of(const Pack<float>& d) {
    const float MAGIC = 12582912.0f;
    Pack<float> t = d * 1.44269504088896341f;
    Pack<float> big = t + MAGIC;
    Pack<float> f = t - (big - MAGIC);
    Pack<float> f2 = f * f;
    Pack<float> p = (f * 5.550733953714371e-2f + 2.4022242426872253e-1f) * f2 + (f * 6.931470036506653e-1f + 1.0f);
    p = p + (f * 1.3264719163998961e-3f + 9.671513922512531e-3f) * (f2 * f2);
    Pack<float> r;  // p * 2^n as an integer add to p's exponent (p in [0.7, 1.42], n >= -126: stays normal)
    typedef typename Vec<float>::I I;
    for (int q = 0; q < U; ++q) r.v[q] = (typename Vec<float>::V)((I)p.v[q] + ((I)big.v[q] << 23));
    return r;
  }
};
template <> struct Exp<double> {
  static constexpr double LOW = -708.0;
  // Cody-Waite reduction d = n ln2 + r, |r| <= ln2/2, then the Taylor series to
  // degree 13 (truncation < 1e-17); 2^n in the exponent bits as for float.
  static TM_INLINE Pack<double> of(const Pack<double>& d) {
    const double MAGIC = 6755399441055744.0 + 1023.0;
    Pack<double> big = d * 1.4426950408889634074 + MAGIC;
    Pack<double> n = big - MAGIC;
    Pack<double> r = d - n * 6.93145751953125e-1;
    r = r - n * 1.42860682030941723212e-6;
    Pack<double> p = r * (1.0 / 6227020800.0) + 1.0 / 479001600.0;
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
    Pack<double> out;
    for (int q = 0; q < U; ++q) out.v[q] = p.v[q] * (typename Vec<double>::V)((typename Vec<double>::I)big.v[q] << 52);
    return out;
  }
};

// ---------------------------------------------------------------- token NLL
// A block stays in L1 between its max pass and its exp-sum pass, so the row is
// read from memory once.
constexpr int BLOCK = 2048;

// Sum of e^(p[i] - m) over a block of n elements (a multiple of the pack), in
// float lanes (at most BLOCK / LANES terms each), then the lanes in double in a fixed order.
// Meanwhile most of the next block (source elements at `next`) is prefetched, so memory
// streams while the exps are computed (nothing misses here for a prefetcher to see).
// 64 ones then 64 zeros: the pack at Ones<K>::at + 64 - v keeps its lanes below v (v <= 64 lanes).
template <class K> struct Ones {
#define TM_ONE8 K(1), K(1), K(1), K(1), K(1), K(1), K(1), K(1)
#define TM_ZERO8 K(0), K(0), K(0), K(0), K(0), K(0), K(0), K(0)
  alignas(64) static constexpr K at[128] = {TM_ONE8,  TM_ONE8,  TM_ONE8,  TM_ONE8,  TM_ONE8,  TM_ONE8,
                                            TM_ONE8,  TM_ONE8,  TM_ZERO8, TM_ZERO8, TM_ZERO8, TM_ZERO8,
                                            TM_ZERO8, TM_ZERO8, TM_ZERO8, TM_ZERO8};
#undef TM_ONE8
#undef TM_ZERO8
};

// A pack's lanes as 8-lane vectors (8 floats or doubles: the same on every path; GCC splits them into this
// path's registers). Kept in registers: a loop over lanes indexed l % 8 went through the stack, which made
// these reductions a large part of a short row's time.
template <class K> struct Lanes8 {
  typedef K T __attribute__((vector_size(8 * sizeof(K))));
};
typedef double D8 __attribute__((vector_size(64)));
template <class K> static TM_INLINE typename Lanes8<K>::T lanes8(const Pack<K>& a, int j) {
  typename Lanes8<K>::T r;
  std::memcpy(&r, reinterpret_cast<const K*>(a.v) + 8 * j, sizeof r);
  return r;
}

// Lane l into partial sum l % 8 in order of l, in double, then a fixed tree: the same bits on every path.
template <class K> static TM_INLINE double lane_sum(const Pack<K>& acc) {
  D8 s = __builtin_convertvector(lanes8(acc, 0), D8);
  for (int j = 1; j < Pack<K>::LANES / 8; ++j) s = s + __builtin_convertvector(lanes8(acc, j), D8);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// The largest lane of hi and the smallest of lo. Neither holds NaN, so the order decides only which zero a
// +0/-0 tie gives, the same on every path (and e^(x - m) and the NLL come out the same with either).
template <class K> static TM_INLINE void lane_max_min(const Pack<K>& hi, const Pack<K>& lo, K& mx, K& mn) {
  typename Lanes8<K>::T a = lanes8(hi, 0), b = lanes8(lo, 0);
  for (int j = 1; j < Pack<K>::LANES / 8; ++j) {
    typename Lanes8<K>::T c = lanes8(hi, j), d = lanes8(lo, j);
    a = c > a ? c : a;
    b = d < b ? d : b;
  }
  K a01 = std::max(a[0], a[1]), a23 = std::max(a[2], a[3]), a45 = std::max(a[4], a[5]), a67 = std::max(a[6], a[7]);
  K b01 = std::min(b[0], b[1]), b23 = std::min(b[2], b[3]), b45 = std::min(b[4], b[5]), b67 = std::min(b[6], b[7]);
  mx = std::max(std::max(a01, a23), std::max(a45, a67));
  mn = std::min(std::min(b01, b23), std::min(b45, b67));
}

// The next block is prefetched during the max pass and the exp pass about in proportion to their work, so
// that memory streams through both: float rows a quarter in the max pass (all of it during the exp pass left
// memory idle in the max pass, where the avx512 exp pass is short and its prefetches came in a burst; half
// and half slowed the avx2 path); double rows, whose exp pass is several times longer, all of it in the exp
// pass. (The measurements: docs/performance.md, "Measurements behind the kernels".)
template <class K> constexpr int MAX_PASS_QUARTERS = std::is_same_v<K, float> ? 1 : 0;
template <class K, int NUM, int DEN, class S> static TM_INLINE void prefetch_part(const S* next, int i) {
  constexpr int BYTES = Pack<K>::LANES * NUM / DEN * (int)sizeof(S);  // NUM/DEN of a pack's worth of source
  for (int c = 0; c < BYTES; c += 64) __builtin_prefetch(reinterpret_cast<const char*>(next + i * NUM / DEN) + c);
}

// A block of `valid` elements padded to n (a multiple of the pack): its whole packs at p, and the last
// pack, when partial, at tail (its padding repeats the block's first value, so that it moves neither
// max nor min). A row is read in place: only a partial last pack is copied.
template <class K> struct Block {
  const K* p;
  const K* tail;
  int n, valid;
  const K* pack(int i) const { return i + Pack<K>::LANES <= valid ? p + i : tail; }
};

// The sum over the block's elements (the padding needs no clamping and is weighted 0).
template <class K, bool CLAMP, class S> static TM_INLINE double block_sum_exp(const Block<K>& b, K m, const S* next) {
  constexpr int W = Pack<K>::LANES;
  const int n = b.n, valid = b.valid;
  Pack<K> acc = splat<K>(K(0));
  for (int i = 0; i < n; i += W) {
    prefetch_part<K, 4 - MAX_PASS_QUARTERS<K>, 4>(next + n * MAX_PASS_QUARTERS<K> / 4, i);
    Pack<K> d = load(b.pack(i)) - m;
    if (CLAMP) d = floor_at(d, Exp<K>::LOW);
    Pack<K> e = Exp<K>::of(d);
    static_assert(W <= 64, "Ones covers 64 lanes");
    if (i + W > valid) e = e * load(Ones<K>::at + 64 - (valid - i));  // padding adds exactly 0
    acc = acc + e;
  }
  return lane_sum(acc);
}

// Fold one block into the row's running (max M, sum S of e^(x - M)); false if
// the block holds +inf or NaN. With arg, *arg becomes the index (at + i) of the block's first maximal
// element when that beats every earlier block's max: a row's first argmax, as torch.argmax breaks ties.
template <class K, class Src> static TM_INLINE bool block_lse(const Block<K>& b, const Src* next, double& M, double& S,
                                                              int64_t* arg = nullptr, int64_t at = 0) {
  constexpr int W = Pack<K>::LANES;
  const K inf = std::numeric_limits<K>::infinity();
  Pack<K> hi = splat<K>(-inf), lo = splat<K>(inf);
  for (int i = 0; i < b.n; i += W) {
    prefetch_part<K, MAX_PASS_QUARTERS<K>, 4>(next, i);
    Pack<K> v = load(b.pack(i));
    hi = vmax(v, hi);  // NaN lanes are dropped here and caught by the sum
    lo = vmin(v, lo);
  }
  K m, mn;
  lane_max_min(hi, lo, m, mn);
  if (m == inf) return false;
  if (m == -inf) {                    // only -inf and NaN: adds exactly 0 unless a NaN hides here
    for (int i = 0; i < b.n; i += W)  // (the padding copies an element of the block)
      for (int l = 0; l < W; ++l)
        if (b.pack(i)[l] != b.pack(i)[l]) return false;
    return true;
  }
  // Clamping costs two operations per register: skip it when no element needs it.
  double s = mn - m >= Exp<K>::LOW ? block_sum_exp<K, false>(b, m, next) : block_sum_exp<K, true>(b, m, next);
  if (s != s) return false;
  double dm = (double)m;
  if (arg != nullptr && dm > M) {  // rare after a row's first blocks: a scan of a block still in L1
    int i = 0;
    while (b.pack(i / Pack<K>::LANES * Pack<K>::LANES)[i % Pack<K>::LANES] != m) ++i;
    *arg = at + i;
  }
  if (M == -std::numeric_limits<double>::infinity()) {
    S = s;
    M = dm;
  }  // a row's first block: S * 0 + s
  else if (dm > M) {
    S = S * std::exp(M - dm) + s;
    M = dm;
  } else
    S += s * std::exp(dm - M);
  return true;
}

// Fold a row of V values into a running (max M, sum S of e^(x - M)); false if it holds +inf or NaN.
// A whole row from M = -inf, S = 0 is row_nll's log-sum-exp; slices of a row folded in turn carry it
// across slices (the LM head's logits, a vocabulary slice at a time). TABLE: 16-bit values are summed
// from the exp table (as row_nll does, with M = 0) while that sum is a normal double.
template <class L, bool TABLE> static TM_INLINE bool row_fold(const char* row, int64_t V, double& M, double& sum,
                                                              int64_t* arg = nullptr, int64_t v0 = 0) {
  using S = typename L::S;
  using K = typename L::K;
  constexpr int W = Pack<K>::LANES;
  const S* x = reinterpret_cast<const S*>(row);
  if constexpr (TABLE && sizeof(S) == 2) {
    double s = table_sum(x, V, exp_table<L>());
    if (s >= 0x1p-900 && s <= std::numeric_limits<double>::max()) {
      if (0.0 > M) {
        sum = sum * std::exp(M) + s;
        M = 0.0;
      } else
        sum += s * std::exp(-M);
      return true;
    }
  }
  alignas(64) K buf[std::is_same_v<S, K> ? W : BLOCK];  // the partial last pack, or the converted block
  for (int64_t j = 0; j < V; j += BLOCK) {
    constexpr bool SAME = std::is_same_v<S, K>;
    const int n = (int)std::min<int64_t>(BLOCK, V - j), whole = n / W * W;
    K* tail = SAME ? buf : buf + whole;
    const Block<K> b{SAME ? reinterpret_cast<const K*>(x + j) : buf, tail, (n + W - 1) / W * W, n};
    if constexpr (SAME)
      std::memcpy(tail, x + j + whole, (n - whole) * sizeof(K));
    else
      for (int i = 0; i < n; ++i) buf[i] = L::get(x[j + i]);
    for (int i = n - whole; i < b.n - whole; ++i) tail[i] = b.p[0];
    // The prefetch runs past the row's end into the next row (prefetches never fault).
    if (!block_lse<K>(b, x + j + n, M, sum, arg, v0 + j)) return false;
  }
  return true;
}

template <class L> static TM_INLINE double row_nll(const char* row, int64_t V, int64_t target) {
  using S = typename L::S;
  const S* x = reinterpret_cast<const S*>(row);
  if constexpr (sizeof(S) == 2) {
    // No max shift is needed while the sum stays a normal double: terms lost to
    // underflow are below 2^-1022 each, so below 2^-100 of a sum >= 2^-900.
    // Otherwise (a logit > 709, all logits < -620, NaN or +inf) the general path decides.
    double s = table_sum(x, V, exp_table<L>());
    if (s >= 0x1p-900 && s <= std::numeric_limits<double>::max()) return std::log(s) - (double)L::get(x[target]);
  }
  double M = -std::numeric_limits<double>::infinity(), sum = 0.0;
  if (!row_fold<L, false>(row, V, M, sum)) return std::numeric_limits<double>::quiet_NaN();
  // (M - x[t]) first: exact for float32 logits, and with huge equal logits (1e30) M + log(sum) would
  // round log(sum) away
  return (M - (double)L::get(x[target])) + std::log(sum);
}

static double nll_f16(const char* r, int64_t V, int64_t t) { return row_nll<LoadF16>(r, V, t); }
static double nll_bf16(const char* r, int64_t V, int64_t t) { return row_nll<LoadBF16>(r, V, t); }
static double nll_f32(const char* r, int64_t V, int64_t t) { return row_nll<LoadId<float>>(r, V, t); }
static double nll_f64(const char* r, int64_t V, int64_t t) { return row_nll<LoadId<double>>(r, V, t); }
static bool fold_f16(const char* r, int64_t n, double& M, double& S) { return row_fold<LoadF16, true>(r, n, M, S); }
static bool fold_bf16(const char* r, int64_t n, double& M, double& S) { return row_fold<LoadBF16, true>(r, n, M, S); }
static bool fold_f32(const char* r, int64_t n, double& M, double& S) {
  return row_fold<LoadId<float>, false>(r, n, M, S);
}
static bool fold_f64(const char* r, int64_t n, double& M, double& S) {
  return row_fold<LoadId<double>, false>(r, n, M, S);
}

// A slice [v0, v0 + n) of a row folded as row_fold does, and its first argmax tracked in arg: the
// continuation scores of a language-model harness (a token's log-probability and whether it is the
// greedy choice) in one read. Every dtype is widened to double and its exps taken in double, so that a
// log-probability carries no float-exp error (float32 rows here cost a slower exp pass than fold_f32).
template <class L> static bool score_row(const char* r, int64_t n, int64_t v0, double& M, double& S, int64_t& arg) {
  return row_fold<Wide<L>, false>(r, n, M, S, &arg, v0);
}

// ---------------------------------------------------------------- top-k
// Could v displace the current k-th candidate? A superset test (NaN passes),
// refined by the exact order in nth_element. An equal value never passes:
// scanned later, it has a higher index than every kept one.
template <class K, bool LARGEST> static TM_INLINE int may_enter(K v, K thr) {
  if constexpr (std::is_floating_point_v<K>)
    return LARGEST ? !(v <= thr) : !(v >= thr);
  else
    return LARGEST ? v > thr : v < thr;
}

// SCAN 32 with a buffer of k + max(k, 64) was the fastest pair measured (docs/performance.md,
// "Measurements behind the kernels"): larger buffers raise the threshold too late, smaller scans
// test it too often.
constexpr int SCAN = 32;
constexpr int64_t HEAP_K = 16;  // k up to this keeps a heap (see row_topk)

// A floor under the k-th best of a row (k <= 16), from its first <= 2,048 values: LN lanes (a pack:
// at least 16) keep the best of every LN-th value (each lane starts from a value of its own, so each
// lane's best is some element's value); the lanes form p = next_pow2(k) groups, and the worst of the
// p group bests has p >= k distinct elements at least as good as it: no value worse than it is in the
// top k. The scan then starts from there instead of from the first k values, and far fewer values
// enter the heap (each entry costs branch mispredictions). Only a filter: the top k do not depend on it, whatever
// the lane count of the path. False where it says nothing.
template <class L, bool LARGEST>
static TM_INLINE bool prefix_floor(const typename L::S* x, int64_t V, int64_t k, typename L::K& floor) {
  using K = typename L::K;
  typedef K NV __attribute__((vector_size(VB)));  // this path's registers: no element-wise lowering
  typedef K NVU __attribute__((vector_size(VB), aligned(alignof(K)), may_alias));
  constexpr int PER = VB / (int)sizeof(K), LN = PER * U;
  const int64_t n = std::min<int64_t>(V, 2048) / LN * LN;
  if (n < 2 * LN) return false;
  NV best[U];
  for (int q = 0; q < U; ++q) best[q] = *reinterpret_cast<const NVU*>(x + q * PER);
  for (int64_t i = LN; i < n; i += LN)
    for (int q = 0; q < U; ++q) {
      NV v = *reinterpret_cast<const NVU*>(x + i + q * PER);
      best[q] = (LARGEST ? v > best[q] : v < best[q]) ? v : best[q];  // NaN: kept only as a lane's start
    }
  auto lane = [&](int l) { return best[l / PER][l % PER]; };
  int p = 1;
  while (p < k) p *= 2;
  const int g = LN / p;
  for (int q = 0; q < p; ++q) {
    K b = lane(q * g);
    for (int l = 1; l < g; ++l) b = better<K, LARGEST>(lane(q * g + l), b) ? lane(q * g + l) : b;
    if (q == 0 || better<K, LARGEST>(floor, b)) floor = b;
  }
  // Values equal to the floor may still enter (by index): the scan's threshold sits one step worse.
  if constexpr (std::is_floating_point_v<K>) {
    const K worst = LARGEST ? -std::numeric_limits<K>::infinity() : std::numeric_limits<K>::infinity();
    if (floor != floor || floor == worst) return false;
    floor = std::nextafter(floor, worst);
  } else {
    if (floor == (LARGEST ? std::numeric_limits<K>::min() : std::numeric_limits<K>::max())) return false;
    floor = LARGEST ? floor - 1 : floor + 1;
  }
  return true;
}

template <class L, bool LARGEST> static TM_INLINE void row_topk(const char* row, int64_t V, int64_t k, bool sorted,
                                                                Cand<typename L::K>* buf, int64_t cap, char* out_v,
                                                                int64_t* out_i) {
  using S = typename L::S;
  using K = typename L::K;
  const S* x = reinterpret_cast<const S*>(row);
  Before<K, LARGEST> before;
  // Seed with the first k; the threshold is the worst of the kept k.
  int64_t n = 0, i = 0;
  for (; i < k; ++i) buf[n++] = {L::get(x[i]), i};
  // Small k: the kept k are a heap with the worst on top, so the threshold rises with every entry.
  // Larger k: a buffer of candidates, partitioned when full.
  const bool heap = k <= HEAP_K;
  if (heap) std::make_heap(buf, buf + k, before);
  K floor{};
  bool floored = false;  // 16-bit rows: no floor (their lanes would be converted one by one)
  if constexpr (std::is_same_v<S, K>) floored = heap && prefix_floor<L, LARGEST>(x, V, k, floor);
  auto raised = [&](K t) { return floored && better<K, LARGEST>(floor, t) ? floor : t; };  // never below the floor
  K thr = heap ? raised(buf[0].v) : std::max_element(buf, buf + k, before)->v;
  auto add = [&](K v, int64_t j) {
    if (heap) {
      Cand<K> c{v, j};
      if (!before(c, buf[0])) return;  // a NaN threshold lets numbers through to here
      int64_t h = 0;                   // c replaces the worst on top and sinks below every worse child
      for (int64_t ch; (ch = 2 * h + 1) < k; h = ch) {
        if (ch + 1 < k && before(buf[ch], buf[ch + 1])) ++ch;
        if (!before(c, buf[ch])) break;
        buf[h] = buf[ch];
      }
      buf[h] = c;
      thr = raised(buf[0].v);
      return;
    }
    buf[n++] = {v, j};
    if (n == cap) {
      std::nth_element(buf, buf + (k - 1), buf + n, before);
      n = k;
      thr = buf[k - 1].v;
    }
  };
  for (; i + SCAN <= V; i += SCAN) {
    int any = 0;  // a plain OR-reduction: the vectorizer's bread and butter, at this path's width
    for (int l = 0; l < SCAN; ++l) any |= may_enter<K, LARGEST>(L::get(x[i + l]), thr);
    if (!any) continue;
    // The lanes that may enter, as bits (SSE2 has no per-lane shift: built here, off the hot loop);
    // only those are read again.
    uint32_t bits = 0;
    for (int l = 0; l < SCAN; ++l) bits |= (uint32_t)may_enter<K, LARGEST>(L::get(x[i + l]), thr) << l;
    for (; bits; bits &= bits - 1) {
      int l = __builtin_ctz(bits);
      K v = L::get(x[i + l]);
      if (may_enter<K, LARGEST>(v, thr)) add(v, i + l);
    }
  }
  for (; i < V; ++i) {
    K v = L::get(x[i]);
    if (may_enter<K, LARGEST>(v, thr)) add(v, i);
  }
  if (n > k) std::nth_element(buf, buf + (k - 1), buf + n, before);
  if (sorted) std::sort(buf, buf + k, before);
  for (int64_t j = 0; j < k; ++j) {
    out_i[j] = buf[j].i;
    std::memcpy(out_v + j * sizeof(S), x + buf[j].i, sizeof(S));  // the stored bits, not K
  }
}

#define TM_TOPK_ROW(NAME, LOADER)                                                                          \
  static void NAME(const char* r, int64_t V, int64_t k, bool lg, bool so, void* buf, int64_t cap, char* v, \
                   int64_t* i) {                                                                           \
    using C = Cand<typename LOADER::K>;                                                                    \
    if (lg)                                                                                                \
      row_topk<LOADER, true>(r, V, k, so, static_cast<C*>(buf), cap, v, i);                                \
    else                                                                                                   \
      row_topk<LOADER, false>(r, V, k, so, static_cast<C*>(buf), cap, v, i);                               \
  }
TM_TOPK_ROW(topk_f16, LoadF16)
TM_TOPK_ROW(topk_bf16, LoadBF16)
TM_TOPK_ROW(topk_f32, LoadId<float>)
TM_TOPK_ROW(topk_f64, LoadId<double>)
TM_TOPK_ROW(topk_i8, LoadId<int8_t>)
TM_TOPK_ROW(topk_i16, LoadId<int16_t>)
TM_TOPK_ROW(topk_i32, LoadId<int32_t>)
TM_TOPK_ROW(topk_i64, LoadId<int64_t>)
TM_TOPK_ROW(topk_u8, LoadId<uint8_t>)
TM_TOPK_ROW(topk_u16, LoadId<uint16_t>)
TM_TOPK_ROW(topk_u32, LoadId<uint32_t>)
TM_TOPK_ROW(topk_u64, LoadId<uint64_t>)
#undef TM_TOPK_ROW

// ---------------------------------------------------------------- rank of the target
// rank = #{j: s_j ahead of s_t}, ahead being > on one side of t and >= on the other as the tie rule says.
// One pass counts "greater" and "equal" over the whole row with no index test (at the speed of a plain
// read), in two parts split at the step holding t: the ties before t are the first part's and a few
// elements more, so a tied target (most bf16 rows) needs no second look at the row. NaN ranks above every
// number and NaNs tie each other (as in top-k).

// Scores compared as they are (floats, integers).
template <class T> struct RankId {
  using S = T;
  using K = T;
  typedef K KV __attribute__((vector_size(VB)));
  static TM_INLINE K key(S s) { return s; }
  static TM_INLINE KV keys(KV v) { return v; }
};
// 16-bit floats by an order key of their bits, in int16 lanes (twice a float32 key's lanes): sign and
// magnitude, -0 == +0, every NaN one key above +inf. INF_MAG: the magnitude bits of inf.
template <int INF_MAG> struct RankHalf {
  using S = uint16_t;
  using K = int16_t;
  typedef K KV __attribute__((vector_size(VB)));
  static TM_INLINE K key(S h) {
    const int mag = h & 0x7fff;
    return (K)(mag > INF_MAG ? 0x7fff : (h & 0x8000) ? -mag : mag);
  }
  static TM_INLINE KV keys(KV h) {
    const KV mag = h & 0x7fff, sign = h >> 15;  // sign: 0 or -1
    return mag > (K)INF_MAG ? KV{} + 0x7fff : (mag ^ sign) - sign;
  }
};

// acc + 1 in the lanes where the mask m (all ones or zero) is set: a masked add on AVX-512 (GCC turns the
// select into one), a subtract of the mask elsewhere (the select became blends and spilled registers on AVX2).
template <class M> static TM_INLINE M bump(M acc, M m) {
#if TM_VEC_BYTES == 64
  return m ? acc + 1 : acc;
#else
  return acc - m;
#endif
}

// A step is one cache line (RU registers), the next prefetched 4 KB ahead into L2: faster than 128-byte steps
// on every path, and a prefetch into L1 lost on 4 KB pages (docs/performance.md, "Measurements behind the
// kernels").
constexpr int RU = VB >= 64 ? 1 : 64 / VB;
constexpr int RANK_AHEAD = 4096;

// The counts of key kt in a row: g (floats: v <= kt, one compare where !(v <= kt) cost a third operation on
// AVX2; integers and 16-bit keys: v > kt) and e (v == kt; NANT, kt NaN: v is NaN, and g is not kept), over
// whole steps, in lanes of the comparison's own width widened to int64 lanes before one can overflow (8-bit
// lanes every 127 steps).
template <class R, bool NANT> struct RankCount {
  using S = typename R::S;
  using K = typename R::K;
  using KV = typename R::KV;
  typedef K KVU __attribute__((vector_size(VB), aligned(alignof(K)), may_alias));
  using M = decltype(KV{} > KV{});
  static constexpr bool LE = std::is_floating_point_v<K>;
  static constexpr int PER = VB / (int)sizeof(K), LN = PER * RU;
  typedef int64_t W __attribute__((vector_size(PER * 8)));
  static constexpr int64_t FLUSH = sizeof(K) == 1 ? 127 : sizeof(K) == 2 ? 32767 : int64_t(1) << 30;
  W gw{}, ew{};

  // Elements [i, end) of x, both multiples of LN.
  TM_INLINE void steps(const S* x, int64_t i, int64_t end, K kt) {
    while (i < end) {
      const int64_t stop = std::min(end, i + FLUSH * LN);
      M g[RU] = {}, e[RU] = {};
      for (; i < stop; i += LN) {
        for (int c = 0; c < LN * (int)sizeof(K); c += 64)  // past the row's end too: prefetches never fault
          __builtin_prefetch(reinterpret_cast<const char*>(x + i) + RANK_AHEAD + c, 0, 2);
        for (int q = 0; q < RU; ++q) {
          const KV v = R::keys(*reinterpret_cast<const KVU*>(x + i + q * PER));
          if constexpr (NANT) {
            e[q] = bump(e[q], v != v);
          } else {
            g[q] = bump(g[q], LE ? v <= kt : v > kt);
            e[q] = bump(e[q], v == kt);
          }
        }
      }
      for (int q = 0; q < RU; ++q) {
        if constexpr (!NANT) gw += __builtin_convertvector(g[q], W);
        ew += __builtin_convertvector(e[q], W);
      }
    }
  }
  static TM_INLINE int64_t total(const W& w) {
    int64_t a[PER], s = 0;
    std::memcpy(a, &w, sizeof a);
    for (int l = 0; l < PER; ++l) s += a[l];
    return s;
  }
  static TM_INLINE bool tie(K v, K kt) { return NANT ? v != v : v == kt; }
};

template <class R, bool NANT> static TM_INLINE int64_t row_rank_of(const typename R::S* x, int64_t V, int64_t t,
                                                                   typename R::K kt, bool before_ge, bool after_ge) {
  using C = RankCount<R, NANT>;
  C c;
  const int64_t whole = V / C::LN * C::LN, a = t / C::LN * C::LN;  // a <= t, and a == whole when t is past it
  c.steps(x, 0, a, kt);
  const typename C::W before = c.ew;
  c.steps(x, a, whole, kt);
  int64_t gt = NANT ? 0 : C::LE ? whole - C::total(c.gw) : C::total(c.gw), eq = C::total(c.ew);
  for (int64_t i = whole; i < V; ++i) {
    const typename R::K v = R::key(x[i]);
    if constexpr (!NANT) gt += !(v <= kt);
    eq += C::tie(v, kt);
  }
  if (eq == 1 || !(before_ge || after_ge)) return gt;  // the target ties only itself, or ties never count
  if (before_ge && after_ge) return gt + eq - 1;
  int64_t eq_before = C::total(before);
  for (int64_t i = a; i < t; ++i) eq_before += C::tie(R::key(x[i]), kt);
  return gt + (before_ge ? eq_before : eq - 1 - eq_before);
}

template <class R>
static TM_INLINE int64_t row_rank(const char* row, int64_t V, int64_t t, bool before_ge, bool after_ge) {
  const typename R::S* x = reinterpret_cast<const typename R::S*>(row);
  const typename R::K kt = R::key(x[t]);
  if constexpr (std::is_floating_point_v<typename R::K>)
    if (kt != kt) return row_rank_of<R, true>(x, V, t, kt, before_ge, after_ge);
  return row_rank_of<R, false>(x, V, t, kt, before_ge, after_ge);
}

#define TM_RANK_ROW(NAME, R) \
  static int64_t NAME(const char* r, int64_t V, int64_t t, bool b, bool a) { return row_rank<R>(r, V, t, b, a); }
TM_RANK_ROW(rank_f16, RankHalf<0x7c00>)
TM_RANK_ROW(rank_bf16, RankHalf<0x7f80>)
TM_RANK_ROW(rank_f32, RankId<float>)
TM_RANK_ROW(rank_f64, RankId<double>)
TM_RANK_ROW(rank_i8, RankId<int8_t>)
TM_RANK_ROW(rank_i16, RankId<int16_t>)
TM_RANK_ROW(rank_i32, RankId<int32_t>)
TM_RANK_ROW(rank_i64, RankId<int64_t>)
TM_RANK_ROW(rank_u8, RankId<uint8_t>)
TM_RANK_ROW(rank_u16, RankId<uint16_t>)
TM_RANK_ROW(rank_u32, RankId<uint32_t>)
TM_RANK_ROW(rank_u64, RankId<uint64_t>)
#undef TM_RANK_ROW

// This path's entry points, in dtype-code order.
static const Kernels kernels = {
    TM_PATH_NAME,
    {nll_f16, nll_bf16, nll_f32, nll_f64},
    {fold_f16, fold_bf16, fold_f32, fold_f64},
    {score_row<LoadF16>, score_row<LoadBF16>, score_row<LoadId<float>>, score_row<LoadId<double>>},
    {topk_f16, topk_bf16, topk_f32, topk_f64, topk_i8, topk_i16, topk_i32, topk_i64, topk_u8, topk_u16, topk_u32,
     topk_u64},
    {rank_f16, rank_bf16, rank_f32, rank_f64, rank_i8, rank_i16, rank_i32, rank_i64, rank_u8, rank_u16, rank_u32,
     rank_u64},
};
