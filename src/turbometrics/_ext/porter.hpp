// The Porter stemmer as nltk's PorterStemmer (mode NLTK_EXTENSIONS) stems
// lowercase ASCII words: the paper's five steps plus nltk's departures (the
// irregular forms, "ies"/"ied" on 4-letter words, step 1c's condition, the
// "alli"/"fulli"/"logi" rules of step 2, the 2-letter *o case). rouge-score
// calls it on tokens of [a-z0-9] longer than 3 characters.
#pragma once
#include <string>
#include <vector>

namespace tmt {

namespace porter {

using std::string;

inline bool is_vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

// Consonant flags left to right: y is a consonant at the start or after a vowel.
inline void flags(const string& w, std::vector<char>& f) {
  f.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) f[i] = is_vowel(w[i]) ? 0 : (w[i] == 'y' ? (i == 0 ? 1 : !f[i - 1]) : 1);
}
inline bool cons(const string& w, size_t i) {
  std::vector<char> f;
  flags(w.substr(0, i + 1), f);
  return f[i];
}
// m in [C](VC){m}[V]: the number of "vc" transitions.
inline int measure(const string& s) {
  std::vector<char> f;
  flags(s, f);
  int m = 0;
  for (size_t i = 1; i < f.size(); ++i) m += (!f[i - 1] && f[i]);
  return m;
}
inline bool has_vowel(const string& s) {
  std::vector<char> f;
  flags(s, f);
  for (char c : f)
    if (!c) return true;
  return false;
}
inline bool ends_with(const string& w, const char* suf) {
  const size_t n = std::char_traits<char>::length(suf);
  return w.size() >= n && w.compare(w.size() - n, n, suf) == 0;
}
inline bool ends_double_cons(const string& w) {
  return w.size() >= 2 && w[w.size() - 1] == w[w.size() - 2] && cons(w, w.size() - 1);
}
inline bool ends_cvc(const string& w) {
  const size_t n = w.size();
  if (n >= 3 && cons(w, n - 3) && !cons(w, n - 2) && cons(w, n - 1) && w[n - 1] != 'w' && w[n - 1] != 'x' &&
      w[n - 1] != 'y')
    return true;
  return n == 2 && !cons(w, 0) && cons(w, 1);
}

enum Cond { NONE, M_GT0, M_GT1, ION, LOGI, LL };

struct Rule {
  const char* suffix;
  const char* repl;
  Cond cond;
};

// nltk's _apply_rule_list: the first rule whose suffix matches decides; if
// its condition fails the word is returned unchanged.
inline string apply(const string& w, const Rule* rules, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    const Rule& r = rules[k];
    if (!ends_with(w, r.suffix)) continue;
    const string stem = w.substr(0, w.size() - std::char_traits<char>::length(r.suffix));
    bool ok = true;
    switch (r.cond) {
      case NONE: break;
      case M_GT0: ok = measure(stem) > 0; break;
      case M_GT1: ok = measure(stem) > 1; break;
      case ION: ok = measure(stem) > 1 && (stem.back() == 's' || stem.back() == 't'); break;
      case LOGI: ok = measure(w.substr(0, w.size() - 3)) > 0; break;
      case LL: ok = measure(w.substr(0, w.size() - 1)) > 1; break;
    }
    return ok ? stem + r.repl : w;
  }
  return w;
}

inline string step1a(const string& w) {
  if (ends_with(w, "ies") && w.size() == 4) return w.substr(0, 1) + "ie";
  static const Rule R[] = {{"sses", "ss", NONE}, {"ies", "i", NONE}, {"ss", "ss", NONE}, {"s", "", NONE}};
  return apply(w, R, 4);
}

inline string step1b(const string& w) {
  if (ends_with(w, "ied")) return w.substr(0, w.size() - 3) + (w.size() == 4 ? "ie" : "i");
  if (ends_with(w, "eed")) {
    const string stem = w.substr(0, w.size() - 3);
    return measure(stem) > 0 ? stem + "ee" : w;
  }
  string s;
  bool ok = false;
  for (const char* suf : {"ed", "ing"}) {
    if (ends_with(w, suf)) {
      s = w.substr(0, w.size() - std::char_traits<char>::length(suf));
      if (has_vowel(s)) {
        ok = true;
        break;
      }
    }
  }
  if (!ok) return w;
  if (ends_with(s, "at")) return s + "e";
  if (ends_with(s, "bl")) return s + "e";
  if (ends_with(s, "iz")) return s + "e";
  if (ends_double_cons(s)) {
    const char last = s.back();
    return (last != 'l' && last != 's' && last != 'z') ? s.substr(0, s.size() - 1) : s;
  }
  return (measure(s) == 1 && ends_cvc(s)) ? s + "e" : s;
}

inline string step1c(const string& w) {
  if (!ends_with(w, "y")) return w;
  const string stem = w.substr(0, w.size() - 1);
  return (stem.size() > 1 && cons(stem, stem.size() - 1)) ? stem + "i" : w;
}

inline string step2(const string& w) {
  if (ends_with(w, "alli") && measure(w.substr(0, w.size() - 4)) > 0) return step2(w.substr(0, w.size() - 4) + "al");
  static const Rule R[] = {
      {"ational", "ate", M_GT0}, {"tional", "tion", M_GT0}, {"enci", "ence", M_GT0},   {"anci", "ance", M_GT0},
      {"izer", "ize", M_GT0},    {"bli", "ble", M_GT0},     {"alli", "al", M_GT0},     {"entli", "ent", M_GT0},
      {"eli", "e", M_GT0},       {"ousli", "ous", M_GT0},   {"ization", "ize", M_GT0}, {"ation", "ate", M_GT0},
      {"ator", "ate", M_GT0},    {"alism", "al", M_GT0},    {"iveness", "ive", M_GT0}, {"fulness", "ful", M_GT0},
      {"ousness", "ous", M_GT0}, {"aliti", "al", M_GT0},    {"iviti", "ive", M_GT0},   {"biliti", "ble", M_GT0},
      {"fulli", "ful", M_GT0},   {"logi", "log", LOGI}};
  return apply(w, R, sizeof R / sizeof R[0]);
}

inline string step3(const string& w) {
  static const Rule R[] = {{"icate", "ic", M_GT0}, {"ative", "", M_GT0}, {"alize", "al", M_GT0}, {"iciti", "ic", M_GT0},
                           {"ical", "ic", M_GT0},  {"ful", "", M_GT0},   {"ness", "", M_GT0}};
  return apply(w, R, sizeof R / sizeof R[0]);
}

inline string step4(const string& w) {
  static const Rule R[] = {{"al", "", M_GT1},    {"ance", "", M_GT1}, {"ence", "", M_GT1}, {"er", "", M_GT1},
                           {"ic", "", M_GT1},    {"able", "", M_GT1}, {"ible", "", M_GT1}, {"ant", "", M_GT1},
                           {"ement", "", M_GT1}, {"ment", "", M_GT1}, {"ent", "", M_GT1},  {"ion", "", ION},
                           {"ou", "", M_GT1},    {"ism", "", M_GT1},  {"ate", "", M_GT1},  {"iti", "", M_GT1},
                           {"ous", "", M_GT1},   {"ive", "", M_GT1},  {"ize", "", M_GT1}};
  return apply(w, R, sizeof R / sizeof R[0]);
}

inline string step5a(const string& w) {
  if (!ends_with(w, "e")) return w;
  const string stem = w.substr(0, w.size() - 1);
  const int m = measure(stem);
  if (m > 1) return stem;
  if (m == 1 && !ends_cvc(stem)) return stem;
  return w;
}

inline string step5b(const string& w) {
  static const Rule R[] = {{"ll", "l", LL}};
  return apply(w, R, 1);
}

}  // namespace porter

inline std::string porter_stem(const std::string& word) {
  static const char* const POOL[][2] = {
      {"sky", "sky"},        {"skies", "sky"},       {"dying", "die"},        {"lying", "lie"},
      {"tying", "tie"},      {"news", "news"},       {"innings", "inning"},   {"inning", "inning"},
      {"outings", "outing"}, {"outing", "outing"},   {"cannings", "canning"}, {"canning", "canning"},
      {"howe", "howe"},      {"proceed", "proceed"}, {"exceed", "exceed"},    {"succeed", "succeed"}};
  for (const auto& p : POOL)
    if (word == p[0]) return p[1];
  if (word.size() <= 2) return word;
  using namespace porter;
  return step5b(step5a(step4(step3(step2(step1c(step1b(step1a(word))))))));
}

}  // namespace tmt
