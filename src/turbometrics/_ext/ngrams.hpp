// Exact, dense ids (0, 1, 2, ... in insertion order, so counting uses plain arrays): of tokens by their
// content (TokenIds), of 64-bit keys (IdMap: token-ID input, n-gram pairs), and of the n-grams of
// several sequences at once, one order after another (Levels). BLEU, chrF, TER and ROUGE count on them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "text_common.hpp"

namespace tmt {

// ---------------------------------------------------------------- exact per-segment ids

// The first table of a map sized for n items: no more than 4,096 slots, whatever n (a table doubles
// at half load, so memory follows the distinct keys, not the items: a 50 MB text has 10^7 tokens but
// far fewer distinct ones). Ids are handed out in insertion order either way.
static inline size_t first_capacity(size_t n_items) {
  size_t cap = 16;
  while (cap < 2 * std::min<size_t>(n_items, 2048)) cap <<= 1;
  return cap;
}

// Fibonacci hashing: the top `bits` bits of one multiplication (splitmix64's three took 10% of BLEU).
static inline size_t fib_hash(uint64_t x, int shift) { return (size_t)((x * 0x9e3779b97f4a7c15ULL) >> shift); }
static inline int fib_shift(size_t cap) {  // cap a power of two >= 2
  int shift = 64;
  for (size_t c = cap; c > 1; c >>= 1) --shift;
  return shift;
}

// Open-addressing map from 64-bit keys to dense ids 0, 1, 2, ...
struct IdMap {
  std::vector<uint64_t> keys;
  std::vector<int32_t> vals;  // -1 = empty
  size_t mask = 0;
  int shift = 64;
  int32_t next = 0;
  void reset(size_t n_items) {
    const size_t cap = first_capacity(n_items);
    if (keys.size() < cap) {
      keys.resize(cap);
      vals.resize(cap);
    }
    mask = cap - 1;
    shift = fib_shift(cap);
    std::fill(vals.begin(), vals.begin() + cap, -1);
    next = 0;
  }
  __attribute__((noinline)) void grow() {  // rare: keep id() small enough to inline
    const size_t cap = 2 * (mask + 1);
    const int sh = fib_shift(cap);
    std::vector<uint64_t> k2(cap);
    std::vector<int32_t> v2(cap, -1);
    for (size_t h = 0; h <= mask; ++h) {
      if (vals[h] < 0) continue;
      size_t j = fib_hash(keys[h], sh);
      while (v2[j] >= 0) j = (j + 1) & (cap - 1);
      k2[j] = keys[h];
      v2[j] = vals[h];
    }
    keys.swap(k2);
    vals.swap(v2);
    mask = cap - 1;
    shift = sh;
  }
  int32_t id(uint64_t key) {
    if (2 * ((size_t)next + 1) > mask + 1) grow();
    size_t h = fib_hash(key, shift);
    while (vals[h] >= 0) {
      if (keys[h] == key) return vals[h];
      h = (h + 1) & mask;
    }
    keys[h] = key;
    vals[h] = next;
    return next++;
  }
};

// Token content -> dense id, exact (hash collisions are resolved by comparing code points). Slots point
// at the tokens' text, which must outlive the map, unless reset(n, true) asks it to keep its own copy
// of each distinct token (chrF reads one text at a time and reuses the buffer).
struct TokenIds {
  struct Slot {
    uint64_t hash;
    const uint32_t* p;
    int32_t len;
    int32_t id;
  };
  std::vector<Slot> slots;
  size_t mask = 0;
  int shift = 64;
  int32_t next = 0;
  bool own = false;
  std::vector<std::vector<uint32_t>> chunks;  // the copies: chunks never reallocate, so pointers hold
  void reset(size_t n_items, bool own_copies = false) {
    const size_t cap = first_capacity(n_items);
    if (slots.size() < cap) slots.resize(cap);
    mask = cap - 1;
    shift = fib_shift(cap);
    for (size_t i = 0; i < cap; ++i) slots[i].id = -1;
    next = 0;
    own = own_copies;
    if (chunks.size() > 1) chunks.resize(1);  // the first chunk's memory is kept for the next segment
    if (!chunks.empty()) chunks[0].clear();
    used = 0;
  }
  __attribute__((noinline)) void grow() {  // rare: keep id() small enough to inline
    const size_t cap = 2 * (mask + 1);
    const int sh = fib_shift(cap);
    std::vector<Slot> s2(cap);
    for (Slot& s : s2) s.id = -1;
    for (size_t h = 0; h <= mask; ++h) {
      if (slots[h].id < 0) continue;
      size_t j = fib_hash(slots[h].hash, sh);
      while (s2[j].id >= 0) j = (j + 1) & (cap - 1);
      s2[j] = slots[h];
    }
    slots.swap(s2);
    mask = cap - 1;
    shift = sh;
  }
  size_t used = 0;                                                       // chunks in use
  static bool same(const uint32_t* a, const uint32_t* b, int32_t len) {  // inline: most tokens are short
    if (len > 16) return std::memcmp(a, b, (size_t)len * sizeof(uint32_t)) == 0;
    for (int32_t i = 0; i < len; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  const uint32_t* keep(const uint32_t* p, int32_t len) {
    if (used == 0 || chunks[used - 1].size() + len > chunks[used - 1].capacity()) {
      if (used == chunks.size()) chunks.emplace_back();
      chunks[used].clear();
      chunks[used++].reserve(std::max<size_t>(4096, (size_t)len));
    }
    std::vector<uint32_t>& c = chunks[used - 1];
    c.insert(c.end(), p, p + len);
    return c.data() + c.size() - len;
  }
  int32_t id(const uint32_t* p, int32_t len) { return id(p, len, token_hash(p, len)); }
  // h: token_hash(p, len)
  int32_t id(const uint32_t* p, int32_t len, uint64_t h) {
    if (2 * ((size_t)next + 1) > mask + 1) grow();
    size_t k = fib_hash(h, shift);
    while (slots[k].id >= 0) {
      Slot& s = slots[k];
      if (s.hash == h && s.len == len && same(s.p, p, len)) return s.id;
      k = (k + 1) & mask;
    }
    slots[k] = {h, own ? keep(p, len) : p, len, next};
    return next++;
  }
};

// ---------------------------------------------------------------- n-gram levels

// N-gram ids over several sequences at once (a hypothesis and its references),
// exact and dense: level 1 ids are the unigram ids; the (n+1)-gram starting at
// i gets the id of the pair (n-gram id at i, unigram id at i+n). Ids at each
// level are 0..n_ids-1, so counting uses plain arrays.
struct Levels {
  std::vector<std::vector<int32_t>> uni, gram;  // per sequence
  std::vector<int32_t> cnt, cnt2;               // scratch counters, all zero between uses
  std::vector<int32_t> touched;
  IdMap pairs;
  int nseq = 0;
  size_t n_ids = 0, total = 0;

  void begin(int nseq_, size_t n_unigram_ids) {
    nseq = nseq_;
    if ((int)uni.size() < nseq) {
      uni.resize(nseq);
      gram.resize(nseq);
    }
    total = 0;
    for (int s = 0; s < nseq; ++s) {
      gram[s] = uni[s];
      total += uni[s].size();
    }
    n_ids = n_unigram_ids;
    fit();
  }
  void fit() {
    if (cnt.size() < n_ids + 1) {
      cnt.assign(n_ids + 1, 0);
      cnt2.assign(n_ids + 1, 0);
    }
  }
  // ids of the n-grams of sequence s at the current level
  const std::vector<int32_t>& at(int s) const { return gram[s]; }
  // advance from n-grams to (n+1)-grams
  void next(int n) {
    pairs.reset(total);
    for (int s = 0; s < nseq; ++s) {
      std::vector<int32_t>& g = gram[s];
      const int64_t m = (int64_t)uni[s].size() - n;
      for (int64_t i = 0; i < m; ++i) g[i] = pairs.id(((uint64_t)(uint32_t)g[i] << 32) | (uint32_t)uni[s][i + n]);
      g.resize(m > 0 ? (size_t)m : 0);
    }
    n_ids = (size_t)pairs.next;
    fit();
  }
  // sum over the distinct n-grams g of sequence a of min(count_a(g), count_b(g))
  int64_t clipped(int a, int b) {
    for (int32_t g : gram[b]) cnt2[g]++;
    int64_t m = 0;
    for (int32_t g : gram[a]) cnt[g]++;
    for (int32_t g : gram[a])
      if (cnt[g]) {
        m += std::min(cnt[g], cnt2[g]);
        cnt[g] = 0;
      }
    for (int32_t g : gram[b]) cnt2[g] = 0;
    return m;
  }
};

// The dense ids (exact) of one token list into `ids`.
static void sequence_ids(const Tokens& t, TokenIds& tids, std::vector<int32_t>& ids) {
  ids.resize(t.size());
  const uint32_t* txt = t.text.data();
  if (t.hash.size() == t.size())
    for (size_t i = 0; i < t.size(); ++i) ids[i] = tids.id(txt + t.start[i], t.len[i], t.hash[i]);
  else
    for (size_t i = 0; i < t.size(); ++i) ids[i] = tids.id(txt + t.start[i], t.len[i]);
}

// Map tokens to dense ids (exact) into lv.uni[s] for each token list.
static void token_ids(const std::vector<Tokens>& toks, int nseq, TokenIds& tids, Levels& lv) {
  size_t total = 0;
  for (int s = 0; s < nseq; ++s) total += toks[s].size();
  tids.reset(total);
  if ((int)lv.uni.size() < nseq) {
    lv.uni.resize(nseq);
    lv.gram.resize(nseq);
  }
  for (int s = 0; s < nseq; ++s) sequence_ids(toks[s], tids, lv.uni[s]);
}

// Token-ID sequences (any int64 values) made dense, exactly: seq s is tok[off[s]:off[s + 1]] for s in
// seqs[0..nseq). Into lv.uni[0..nseq); returns the number of distinct ids.
static size_t dense_ids(const int64_t* tok, const int64_t* off, const int64_t* seqs, int nseq, IdMap& map, Levels& lv) {
  int64_t total = 0;
  for (int s = 0; s < nseq; ++s) total += off[seqs[s] + 1] - off[seqs[s]];
  map.reset((size_t)total);
  if ((int)lv.uni.size() < nseq) {
    lv.uni.resize(nseq);
    lv.gram.resize(nseq);
  }
  for (int s = 0; s < nseq; ++s) {
    const int64_t a = off[seqs[s]], b = off[seqs[s] + 1];
    std::vector<int32_t>& u = lv.uni[s];
    u.resize((size_t)(b - a));
    for (int64_t k = a; k < b; ++k) u[k - a] = map.id((uint64_t)tok[k]);
  }
  return (size_t)map.next;
}

}  // namespace tmt
