// The text kernels (tokenizers, BLEU, chrF, ROUGE, LCS, edit distances) in one translation
// unit, for tests/test_portability.py. Not part of the build.
#include "edit_distance.hpp"
#include "rouge.hpp"
#include "text.hpp"

extern "C" {
void tm_bleu_stats(const tmt::StrView* h, const tmt::StrView* r, int64_t n, int64_t* out, int nthreads) {
  tmt::bleu_stats(h, r, n, 1, 0, 0, 4, out, nthreads);
}
void tm_lcs_batch(const int32_t* a, const int64_t* ao, const int32_t* b, const int64_t* bo, int64_t n, int64_t* out) {
  tmt::lcs_batch(a, ao, b, bo, n, 100, out, 2);
}
void tm_edit_texts(const tmt::StrView* a, const tmt::StrView* b, int64_t n, int64_t* out) {
  tmt::edit_texts(a, b, n, true, -1, out, 2);
}
}
