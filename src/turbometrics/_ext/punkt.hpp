// Punkt sentence splitting at run time: nltk 3.10's PunktSentenceTokenizer.span_tokenize
// (the splitter behind nltk.sent_tokenize and rouge-score's split_summaries=True), on code
// points, with a model (abbreviations, collocations, sentence starters, orthographic
// context) loaded once from Python.
//
// nltk's regexes (compiled by the `regex` module since nltk 3.10) and Python's str methods
// decide on Unicode properties (regex's \s, \w, \d; str.isspace/isupper/islower/lower).
// Rather than carry tables that could drift from them, the Python layer computes each
// character's properties with those very functions, once per distinct character
// (`CharTable::set`), before the GIL is released; splitting reads the table only. The steps
// follow nltk's functions of the same names.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "parallel.hpp"
#include "text_common.hpp"

namespace tmt {
namespace punkt {

enum : uint8_t {
  SPACE = 1,       // regex's \s
  WORD = 2,        // regex's \w
  DECIMAL = 4,     // regex's \d
  UPPER = 8,       // str.isupper
  LOWER = 16,      // str.islower
  CASED = 32,      // cased and not case-ignorable (str.lower's final-sigma rule)
  IGNORABLE = 64,  // case-ignorable (skipped by the final-sigma rule)
  PY_SPACE = 128   // str.isspace (str.strip, str.rstrip)
};

struct Char {
  uint8_t flags = 0;
  std::u32string lower;  // str.lower() of the character alone
};

// Every character a text may hold must be set before splitting (`missing` lists those not).
struct CharTable {
  std::vector<Char> low = std::vector<Char>(256);
  std::vector<bool> known = std::vector<bool>(256, false);
  std::unordered_map<uint32_t, Char> high;
  const Char& get(uint32_t c) const {  // a character never set reads as no properties (never a throw)
    if (c < 256) return low[c];
    auto it = high.find(c);
    return it == high.end() ? low[0] : it->second;
  }
  bool has(uint32_t c) const { return c < 256 ? (bool)known[c] : high.count(c) > 0; }
  void set(uint32_t c, uint8_t flags, const std::u32string& lower) {
    Char& ch = c < 256 ? low[c] : high[c];
    ch.flags = flags;
    ch.lower = lower;
    if (c < 256) known[c] = true;
  }
};

enum Ortho : int {  // nltk's _ORTHO_* bits
  BEG_UC = 1 << 1,
  MID_UC = 1 << 2,
  UNK_UC = 1 << 3,
  BEG_LC = 1 << 4,
  MID_LC = 1 << 5,
  UNK_LC = 1 << 6,
  ORTHO_UC = BEG_UC | MID_UC | UNK_UC,
  ORTHO_LC = BEG_LC | MID_LC | UNK_LC
};

struct Model {
  CharTable chars;
  std::unordered_set<std::u32string> abbrev, starters, colloc;  // colloc key: pair_key(a, b)
  std::unordered_map<std::u32string, int> ortho;
  static std::u32string pair_key(const std::u32string& a, const std::u32string& b) {
    std::u32string k(1, (char32_t)a.size());  // length-prefixed: unambiguous for any code points
    return k + a + b;
  }
  int ortho_of(const std::u32string& t) const {
    auto it = ortho.find(t);
    return it == ortho.end() ? 0 : it->second;
  }
};

// One token of nltk's PunktToken: what the annotation reads of it, and the annotations.
struct Token {
  std::u32string type;  // lowercased, "##number##" for numbers
  bool period_final, first_upper, first_lower, initial, single_punct;
  bool sentbreak = false, abbr = false, ellipsis = false;  // the annotations
};

class Splitter {
 public:
  Splitter(const Model& m, const StrView& s) : m_(m), s_(s) {}

  // (start, stop) of each sentence, as Python slices of the text (clamped like text[start:stop]).
  void spans(std::vector<int64_t>& out) {
    out.clear();
    slices_.clear();
    slices_from_text();
    realign_boundaries(out);
  }

 private:
  const Model& m_;
  const StrView& s_;
  std::vector<int64_t> slices_;  // (start, stop) pairs before realignment
  std::vector<Token> toks_;
  std::u32string low_;

  uint32_t c(int64_t i) const { return at(s_, i); }
  uint8_t fl(uint32_t ch) const { return m_.chars.get(ch).flags; }
  bool space(int64_t i) const { return fl(c(i)) & SPACE; }
  bool py_space(int64_t i) const { return fl(c(i)) & PY_SPACE; }

  static bool sent_end(uint32_t ch) { return ch == '.' || ch == '?' || ch == '!'; }
  // _re_non_word_chars: )";}]*:@'({[ curly quotes, guillemets, ? and !
  static bool non_word(uint32_t ch) {
    switch (ch) {
      case ')':
      case '"':
      case ';':
      case '}':
      case ']':
      case '*':
      case ':':
      case '@':
      case '\'':
      case '(':
      case '{':
      case '[':
      case 0x2018:
      case 0x2019:
      case 0x201c:
      case 0x201d:
      case 0xab:
      case 0xbb:
      case '?':
      case '!': return true;
      default: return false;
    }
  }
  // _re_word_start excludes ("`{[:;&#*@)}]-,
  static bool word_start(uint32_t ch) {
    switch (ch) {
      case '(':
      case '"':
      case '`':
      case '{':
      case '[':
      case ':':
      case ';':
      case '&':
      case '#':
      case '*':
      case '@':
      case ')':
      case '}':
      case ']':
      case '-':
      case ',': return false;
      default: return true;
    }
  }
  static bool closing(uint32_t ch) {  // re_boundary_realignment's class: "')]} curly quotes, guillemets
    switch (ch) {
      case '"':
      case '\'':
      case ')':
      case ']':
      case '}':
      case 0x2018:
      case 0x2019:
      case 0x201c:
      case 0x201d:
      case 0xab:
      case 0xbb: return true;
      default: return false;
    }
  }

  // _re_multi_char_punct  (?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)  at p within [p, e): match end, or -1.
  int64_t multi_char(int64_t p, int64_t e) const {
    if (p + 1 >= e) return -1;
    const uint32_t x = c(p), y = c(p + 1);
    if ((x == '-' && y == '-') || (x == '.' && y == '.')) {
      int64_t q = p + 2;
      while (q < e && c(q) == x) ++q;
      return q;
    }
    if (x != '.') return -1;
    int64_t k = 0, q = p;  // the most ". " pairs in a row; then a "." after k (or k - 1) of them
    while (q + 1 < e && c(q) == '.' && space(q + 1)) {
      ++k;
      q += 2;
    }
    if (k >= 2 && q < e && c(q) == '.') return q + 1;
    if (k >= 3) return p + 2 * (k - 1) + 1;
    return -1;
  }

  // The end of a word token \S+? starting at p: the first q > p where a word may end.
  int64_t word_end(int64_t p, int64_t e) const {
    for (int64_t q = p + 1;; ++q) {
      if (q >= e) return e;
      const uint32_t ch = c(q);
      if ((fl(ch) & SPACE) || non_word(ch) || multi_char(q, e) >= 0) return q;
      if (ch == ',' && (q + 1 >= e || space(q + 1) || non_word(c(q + 1)) || multi_char(q + 1, e) >= 0)) return q;
    }
  }

  // PunktLanguageVars.word_tokenize (re.findall of _word_tokenize_fmt) of the line [a, e).
  void word_tokenize(int64_t a, int64_t e) {
    for (int64_t p = a; p < e;) {
      int64_t q = multi_char(p, e);
      if (q < 0) {
        const uint32_t ch = c(p);
        if (fl(ch) & SPACE) {
          ++p;
          continue;
        }
        q = word_start(ch) ? word_end(p, e) : p + 1;
      }
      add_token(p, q);
      p = q;
    }
  }

  // str.lower() of text[a:b] appended to out: per character, but U+03A3 by the final-sigma rule.
  void lower(int64_t a, int64_t b, std::u32string& out) const {
    for (int64_t i = a; i < b; ++i) {
      const uint32_t ch = c(i);
      if (ch < 128) {
        out.push_back(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
      } else if (ch == 0x3a3) {
        int64_t j = i - 1;
        while (j >= a && (fl(c(j)) & IGNORABLE)) --j;
        bool fin = j >= a && (fl(c(j)) & CASED);
        if (fin) {
          j = i + 1;
          while (j < b && (fl(c(j)) & IGNORABLE)) ++j;
          fin = j == b || !(fl(c(j)) & CASED);
        }
        out.push_back(fin ? 0x3c2 : 0x3c3);
      } else {
        out += m_.chars.get(ch).lower;
      }
    }
  }

  // PunktToken(tok) and _first_pass_annotation.
  void add_token(int64_t a, int64_t b) {
    Token t;
    const int64_t n = b - a;
    const uint32_t c0 = c(a);
    lower(a, b, t.type);
    if (is_numeric(t.type)) t.type = U"##number##";
    t.period_final = c(b - 1) == '.';
    t.first_upper = fl(c0) & UPPER;
    t.first_lower = fl(c0) & LOWER;
    t.initial = n == 2 && (fl(c0) & WORD) && !(fl(c0) & DECIMAL) && c(a + 1) == '.';
    bool dots = n >= 2;
    for (int64_t i = a; i < b && dots; ++i) dots = c(i) == '.';
    t.single_punct = n == 1 && (c0 == ';' || c0 == ':' || c0 == ',' || c0 == '.' || c0 == '!' || c0 == '?');
    if (n == 1 && sent_end(c0)) {
      t.sentbreak = true;
    } else if (dots) {  // is_ellipsis
      t.ellipsis = true;
    } else if (t.period_final && !(n >= 2 && c(b - 2) == '.')) {
      low_.clear();
      lower(a, b - 1, low_);
      const size_t dash = low_.rfind(U'-');
      if (m_.abbrev.count(low_) || (dash != std::u32string::npos && m_.abbrev.count(low_.substr(dash + 1))))
        t.abbr = true;
      else
        t.sentbreak = true;
    }
    toks_.push_back(std::move(t));
  }

  // PunktToken._RE_NUMERIC  ^-?[\.,]?\d[\d,\.-]*\.?$  on the lowercased token.
  bool is_numeric(const std::u32string& t) const {
    size_t i = 0;
    if (i < t.size() && t[i] == '-') ++i;
    if (i < t.size() && (t[i] == '.' || t[i] == ',')) ++i;
    if (i >= t.size() || !(fl(t[i]) & DECIMAL)) return false;
    for (++i; i < t.size(); ++i)
      if (!((fl(t[i]) & DECIMAL) || t[i] == ',' || t[i] == '.' || t[i] == '-')) return false;
    return true;
  }

  static std::u32string no_period(const std::u32string& t) {
    return t.size() > 1 && t.back() == '.' ? t.substr(0, t.size() - 1) : t;
  }
  static std::u32string no_sentperiod(const Token& t) { return t.sentbreak ? no_period(t.type) : t.type; }

  enum Verdict { NO, YES, UNKNOWN };
  Verdict ortho_heuristic(const Token& t) const {
    if (t.single_punct) return NO;
    const int oc = m_.ortho_of(no_sentperiod(t));
    if (t.first_upper && (oc & ORTHO_LC) && !(oc & MID_UC)) return YES;
    if (t.first_lower && ((oc & ORTHO_UC) || !(oc & BEG_LC))) return NO;
    return UNKNOWN;
  }

  // _second_pass_annotation of t1 given the next token t2 (first pass only).
  void second_pass(Token& t1, const Token& t2) const {
    if (!t1.period_final) return;
    const std::u32string typ = no_period(t1.type), next_typ = no_sentperiod(t2);
    if (m_.colloc.count(Model::pair_key(typ, next_typ))) {
      t1.sentbreak = false;
      t1.abbr = true;
      return;
    }
    if ((t1.abbr || t1.ellipsis) && !t1.initial) {
      if (ortho_heuristic(t2) == YES) {
        t1.sentbreak = true;
        return;
      }
      if (t2.first_upper && m_.starters.count(next_typ)) {
        t1.sentbreak = true;
        return;
      }
    }
    if (t1.initial || typ == U"##number##") {
      const Verdict v = ortho_heuristic(t2);
      if (v == NO) {
        t1.sentbreak = false;
        t1.abbr = true;
        return;
      }
      if (v == UNKNOWN && t1.initial && t2.first_upper && !(m_.ortho_of(next_typ) & ORTHO_LC)) {
        t1.sentbreak = false;
        t1.abbr = true;
      }
    }
  }

  // text_contains_sentbreak(text[a:e]): a sentence break on any token but the last.
  bool contains_sentbreak(int64_t a, int64_t e) {
    toks_.clear();
    for (int64_t p = a; p <= e;) {  // _tokenize_words: lines split on "\n"; blank lines (strip()) skipped
      int64_t q = p;
      while (q < e && c(q) != '\n') ++q;
      bool blank = true;
      for (int64_t i = p; i < q && blank; ++i) blank = py_space(i);
      if (!blank) word_tokenize(p, q);
      p = q + 1;
    }
    for (size_t i = 0; i + 1 < toks_.size(); ++i) {
      second_pass(toks_[i], toks_[i + 1]);
      if (toks_[i].sentbreak) return true;
    }
    return false;
  }

  static bool ascii_space(uint32_t ch) { return ch == ' ' || (ch >= 0x09 && ch <= 0x0d); }  // string.whitespace

  // _match_potential_end_contexts + _slices_from_text.
  void slices_from_text() {
    const int64_t n = s_.len;
    int64_t last_break = 0;
    int64_t prev_start = 0, prev_stop = 0;        // the previous match's word slice
    int64_t pm = -1, pm_after = 0, pm_next = -1;  // the previous match: position, after_tok end, next_tok start
    auto decide = [&]() {
      if (contains_sentbreak(prev_start, pm_after)) {  // the context is text[prev_start:after_tok end]
        slices_.push_back(last_break);
        slices_.push_back(pm + 1);
        last_break = pm_next >= 0 ? pm_next : pm + 1;
      }
    };
    for (int64_t i = 0; i + 1 < n; ++i) {
      if (!sent_end(c(i))) continue;
      int64_t after, next = -1;  // (?=(?P<after_tok>NonWord|\s+(?P<next_tok>\S+)))
      if (non_word(c(i + 1))) {
        after = i + 2;
      } else if (space(i + 1)) {
        int64_t j = i + 1;
        while (j < n && space(j)) ++j;
        if (j == n) continue;
        int64_t k = j;
        while (k < n && !space(k)) ++k;
        after = k;
        next = j;
      } else {
        continue;
      }
      // the word before: after the last ASCII whitespace since the previous match (nltk's
      // _get_last_whitespace_index, which also answers 0 for a space at offset 0)
      int64_t idx = 0;
      for (int64_t q = i - 1; q >= prev_stop; --q)
        if (ascii_space(c(q))) {
          idx = q - prev_stop;
          break;
        }
      const int64_t word_start_at = idx ? idx + prev_stop + 1 : prev_start;
      if (pm >= 0 && prev_stop <= word_start_at) decide();
      pm = i;
      pm_after = after;
      pm_next = next;
      prev_start = word_start_at;
      prev_stop = i;
    }
    if (pm >= 0) decide();
    int64_t end = n;  // len(text.rstrip())
    while (end > 0 && py_space(end - 1)) --end;
    slices_.push_back(last_break);
    slices_.push_back(end);
  }

  // re_boundary_realignment.match(text[a:b]): its group(0).rstrip() length and its end, or false.
  bool realign_match(int64_t a, int64_t b, int64_t& keep, int64_t& end) const {
    for (int64_t k = a + 1; k <= b && closing(c(k - 1)); ++k) {  // lazy +?: the shortest that is followed by
      if (k < b && space(k)) {                                   // \s+
        int64_t j = k;
        while (j < b && space(j)) ++j;
        int64_t r = j;  // rstrip() takes str.isspace characters, which regex's \s need not all be
        while (r > a && py_space(r - 1)) --r;
        keep = r - a;
        end = j - a;
        return true;
      }
      if ((k + 1 < b && c(k) == '-' && c(k + 1) == '-') || k == b) {  // (?=--) or $
        keep = end = k - a;
        return true;
      }
    }
    return false;
  }

  int64_t clamp(int64_t i) const { return i < 0 ? 0 : (i > s_.len ? s_.len : i); }
  void emit(std::vector<int64_t>& out, int64_t a, int64_t b) const {
    const int64_t x = clamp(a), y = std::max(x, clamp(b));
    out.push_back(x);
    out.push_back(y);
  }

  // _realign_boundaries over the slices.
  void realign_boundaries(std::vector<int64_t>& out) const {
    int64_t realign = 0;
    const size_t m = slices_.size() / 2;
    for (size_t i = 0; i < m; ++i) {
      const int64_t a = slices_[2 * i] + realign, b = slices_[2 * i + 1];
      const bool nonempty = clamp(a) < clamp(b);
      if (i + 1 == m) {
        if (nonempty) emit(out, a, b);
        continue;
      }
      const int64_t a2 = clamp(slices_[2 * i + 2]), b2 = std::max(a2, clamp(slices_[2 * i + 3]));
      int64_t keep, end;
      if (realign_match(a2, b2, keep, end)) {
        emit(out, a, a2 + keep);
        realign = end;
      } else {
        realign = 0;
        if (nonempty) emit(out, a, b);
      }
    }
  }
};

// Sentence spans of n texts: spans[i] holds text i's (start, stop) pairs.
static void split_texts(const Model& m, const StrView* texts, int64_t n, std::vector<std::vector<int64_t>>& spans,
                        int nthreads) {
  spans.assign((size_t)n, {});
  tmthreads::parallel_for(
      n, 64, nthreads, [] { return 0; }, [&](int&, int64_t i) { Splitter(m, texts[i]).spans(spans[i]); });
}

// Each text with its sentences one per line (a line break inside a sentence becomes a space,
// empty sentences are dropped: rouge-score's Lsum input), joined into out at offsets.
static void split_lines(const Model& m, const StrView* texts, int64_t n, std::vector<uint32_t>& out,
                        std::vector<int64_t>& offsets, int nthreads) {
  std::vector<std::vector<int64_t>> spans;
  split_texts(m, texts, n, spans, nthreads);
  offsets.assign(1, 0);
  for (int64_t i = 0; i < n; ++i) {
    bool first = true;
    for (size_t k = 0; k < spans[i].size(); k += 2) {
      if (spans[i][k] == spans[i][k + 1]) continue;
      if (!first) out.push_back('\n');
      first = false;
      for (int64_t j = spans[i][k]; j < spans[i][k + 1]; ++j) {
        const uint32_t ch = at(texts[i], j);
        out.push_back(ch == '\n' ? ' ' : ch);
      }
    }
    offsets.push_back((int64_t)out.size());
  }
}

// For the Python layer: the model's parts, one string at a time, and the characters to describe.
static std::u32string u32(const StrView& v) {
  std::u32string s((size_t)v.len, 0);
  for (int64_t i = 0; i < v.len; ++i) s[i] = at(v, i);
  return s;
}
static void add_abbrev(Model& m, const StrView& t) { m.abbrev.insert(u32(t)); }
static void add_starter(Model& m, const StrView& t) { m.starters.insert(u32(t)); }
static void add_ortho(Model& m, const StrView& t, int flags) { m.ortho[u32(t)] = flags; }
static void add_collocation(Model& m, const StrView& a, const StrView& b) {
  m.colloc.insert(Model::pair_key(u32(a), u32(b)));
}
static void set_char(Model& m, uint32_t c, int flags, const StrView& lower) {
  m.chars.set(c, (uint8_t)flags, u32(lower));
}
static bool has_char(const Model& m, uint32_t c) { return m.chars.has(c); }

}  // namespace punkt
}  // namespace tmt
