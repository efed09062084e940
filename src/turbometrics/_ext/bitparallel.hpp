// The match masks of bit-parallel sequence DPs (LCS, Levenshtein): for each symbol of a pattern, the bit mask of
// its positions, W = ceil(m / 64) words; and the work limit of such a DP.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tmt {

// A bit-parallel DP of m x n symbols costs m n / 64 word operations: past 2^38 (~4e9, a few seconds) a pair
// raises ValueError instead of running for minutes.
constexpr double MAX_BIT_CELLS = 274877906944.0;  // 2^38

static inline void check_cells(double cells, double limit, const char* what, int64_t m, int64_t n) {
  if (cells > limit)
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(m) + " x " + std::to_string(n) +
                                " tokens is over the limit of " + std::to_string((int64_t)limit) +
                                " token pairs; split the texts");
}

// O(m) memory for any vocabulary, besides a table of the ids (n_ids entries, kept between patterns). Up to 32,768
// symbols every symbol's mask is kept (at most 2^24 words); past that only those of the symbols with at least T
// positions are (T chosen so that they fit 2^24 words), and a rarer symbol's mask is set in `scratch` from its
// positions when it is met (fewer positions than the mask has words, so cheaper than a kept mask's reads).
struct MatchMasks {
  int64_t W = 0;  // words per mask
  std::vector<uint64_t> pm, scratch;
  std::vector<int32_t> slot;  // id -> index into `ids`, -1 if the id is not in the pattern (all -1 between uses)
  std::vector<int32_t> ids, cnt, first, pos, row;
  bool all_kept = true;
  int32_t in_scratch = -1;  // the symbol whose mask `scratch` holds
  bool dirty = false;       // a DP was interrupted before release()

  // The masks of a[0..m), ids in [0, n_ids), m >= 1.
  void build(const int32_t* a, int64_t m, size_t n_ids) {
    if (m > INT32_MAX)  // positions are int32
      throw std::invalid_argument("a sequence of " + std::to_string(m) + " ids is over the limit of 2^31 - 1");
    if (dirty || slot.size() < n_ids) slot.assign(std::max(slot.size(), n_ids), -1);
    dirty = true;
    W = (m + 63) / 64;
    // kept masks: symbols with at least T positions, T chosen so they fit 2^24 words (all of them below
    // 32,768 symbols: then the masks are set straight from a, as for short texts, the common case)
    const int64_t T = std::max<int64_t>(1, (m * W + ((int64_t)1 << 24) - 1) >> 24);
    ids.clear();
    for (int64_t i = 0; i < m; ++i) {
      int32_t& s = slot[a[i]];
      if (s < 0) {
        s = (int32_t)ids.size();
        ids.push_back(a[i]);
      }
    }
    const size_t k = ids.size();
    all_kept = T == 1;
    if (all_kept) {
      pm.assign(k * W, 0);
      for (int64_t i = 0; i < m; ++i) pm[(size_t)slot[a[i]] * W + i / 64] |= 1ULL << (i % 64);
      return;
    }
    // positions of each symbol, in order (CSR)
    first.assign(k + 1, 0);
    for (int64_t i = 0; i < m; ++i) first[(size_t)slot[a[i]] + 1]++;
    for (size_t s = 0; s < k; ++s) first[s + 1] += first[s];
    cnt.assign(first.begin(), first.end() - 1);
    pos.resize((size_t)m);
    for (int64_t i = 0; i < m; ++i) pos[(size_t)cnt[slot[a[i]]]++] = (int32_t)i;
    row.resize(k);
    int32_t rows = 0;
    for (size_t s = 0; s < k; ++s) row[s] = first[s + 1] - first[s] >= T ? rows++ : -1;
    pm.assign((size_t)rows * W, 0);
    for (size_t s = 0; s < k; ++s)
      if (row[s] >= 0)
        for (int32_t q = first[s]; q < first[s + 1]; ++q) pm[(size_t)row[s] * W + pos[q] / 64] |= 1ULL << (pos[q] % 64);
    scratch.assign((size_t)W, 0);
    in_scratch = -1;
  }

  // The W-word mask of id x, nullptr if x is not in the pattern (valid until the next call).
  const uint64_t* get(int32_t x) {
    const int32_t s = slot[x];
    if (s < 0) return nullptr;
    if (all_kept) return &pm[(size_t)s * W];
    if (row[s] >= 0) return &pm[(size_t)row[s] * W];
    if (in_scratch != s) {
      if (in_scratch >= 0)
        for (int32_t q = first[in_scratch]; q < first[in_scratch + 1]; ++q) scratch[pos[q] / 64] = 0;
      for (int32_t q = first[s]; q < first[s + 1]; ++q) scratch[pos[q] / 64] |= 1ULL << (pos[q] % 64);
      in_scratch = s;
    }
    return scratch.data();
  }

  // Done with the pattern: the id table back to all -1.
  void release() {
    for (int32_t id : ids) slot[id] = -1;
    dirty = false;
  }
};

}  // namespace tmt
