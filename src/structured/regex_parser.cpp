#include "structured/regex_parser.h"

#include <optional>
#include <string>
#include <vector>

#include "structured/grammar_error.h"
#include "structured/utf8_ranges.h"

namespace dcu::structured {
namespace {

// ECMAScript's \s.
const std::vector<CodeRange> kSpace = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0},     {0x1680, 0x1680},
                                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// '.': anything but line terminators.
const std::vector<CodeRange> kDot = {{0, 0x09}, {0x0B, 0x0C}, {0x0E, 0x2027}, {0x202A, kMaxCodePoint}};

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view text, CharEncoding encoding)
      : g_(g), text_(text), encoding_(encoding) {}

  int parse_top(RegexMatch match) {
    std::vector<int> branches;
    for (;;) {
      bool anchored_start = false, anchored_end = false;
      if (eat('^')) anchored_start = true;
      std::vector<int> items = parse_sequence(/*top=*/true, anchored_end);
      if (match == RegexMatch::Search) {
        if (!anchored_start) items.insert(items.begin(), any_string());
        if (!anchored_end) items.push_back(any_string());
      }
      branches.push_back(g_.seq(std::move(items)));
      if (!eat('|')) break;
    }
    if (pos_ < text_.size()) fail_at("unbalanced ')'");
    return g_.alt(std::move(branches));
  }

 private:
  [[noreturn]] void fail_at(const std::string& what) const {
    grammar_error("regex '{}': {} (at offset {})", std::string(text_), what, pos_);
  }
  [[noreturn]] void unsupported(const std::string& what) const {
    grammar_error("regex '{}': {} is not supported", std::string(text_), what);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool eat(char c) {
    if (!at_end() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  int any_string() { return g_.star(encoded_chars(g_, {{0, kMaxCodePoint}}, encoding_)); }

  int parse_alternation() {
    std::vector<int> branches;
    for (;;) {
      bool unused = false;
      branches.push_back(g_.seq(parse_sequence(false, unused)));
      if (!eat('|')) break;
    }
    return g_.alt(std::move(branches));
  }

  std::vector<int> parse_sequence(bool top, bool& anchored_end) {
    std::vector<int> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (top && (at_end() || peek() == '|')) {
          anchored_end = true;
          break;
        }
        unsupported("an anchor '$' other than at the end of the pattern");
      }
      if (peek() == '^') unsupported("an anchor '^' other than at the start of the pattern");
      int atom = parse_atom();
      items.push_back(parse_quantifiers(atom));
    }
    return items;
  }

  std::optional<int> read_number() {
    size_t start = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    if (start == pos_) return std::nullopt;
    if (pos_ - start > 6) fail_at("a repetition count that large");
    return std::stoi(std::string(text_.substr(start, pos_ - start)));
  }

  // {n}, {n,}, {n,m} at pos_; nullopt (pos_ unchanged) when the brace is a literal.
  std::optional<std::pair<int, int>> read_braces() {
    const size_t start = pos_;
    if (!eat('{')) return std::nullopt;
    auto lo = read_number();
    if (!lo) {
      pos_ = start;
      return std::nullopt;
    }
    int hi = *lo;
    if (eat(',')) {
      auto m = read_number();
      hi = m ? *m : -1;
    }
    if (!eat('}')) {
      pos_ = start;
      return std::nullopt;
    }
    if (hi >= 0 && hi < *lo) fail_at("a repetition {n,m} with m < n");
    return std::pair{*lo, hi};
  }

  int parse_quantifiers(int atom) {
    for (;;) {
      int lo, hi;
      if (eat('*')) lo = 0, hi = -1;
      else if (eat('+')) lo = 1, hi = -1;
      else if (eat('?')) lo = 0, hi = 1;
      else if (auto b = read_braces()) lo = b->first, hi = b->second;
      else return atom;
      if (eat('+')) unsupported("a possessive quantifier");
      eat('?');  // lazy: the same strings match
      atom = g_.repeat(atom, lo, hi);
    }
  }

  int parse_group() {
    if (eat('?')) {
      if (eat(':')) {
      } else if (peek() == '=' || peek() == '!') {
        unsupported("lookahead");
      } else if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) {
        unsupported("lookbehind");
      } else if (eat('P') || peek() == '<') {
        if (!eat('<')) {
          if (peek() == '=') unsupported("a backreference");
          fail_at("a malformed group");
        }
        while (!at_end() && peek() != '>') ++pos_;
        if (!eat('>')) fail_at("an unterminated group name");
      } else if (peek() == '>') {
        unsupported("an atomic group");
      } else {
        unsupported("an inline flag group");
      }
    }
    const int inner = parse_alternation();
    if (!eat(')')) fail_at("a missing ')'");
    return inner;
  }

  uint32_t read_hex(size_t digits) {
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail_at("a malformed hex escape");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    return v;
  }

  // One code point from UTF-8 at pos_.
  uint32_t read_utf8() {
    const auto b0 = uint8_t(peek());
    int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos_ + size_t(len) > text_.size()) fail_at("invalid UTF-8");
    uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (uint8_t(text_[pos_ + size_t(i)]) & 0x3F);
    pos_ += size_t(len);
    return cp;
  }

  // An escape after '\': a class (\d ...) fills `set`; a single character is returned.
  std::optional<uint32_t> parse_escape(std::vector<CodeRange>& set, bool in_class) {
    if (at_end()) fail_at("a trailing backslash");
    const char c = text_[pos_++];
    auto add_negated = [&](const std::vector<CodeRange>& r) {
      for (const CodeRange& x : normalize_ranges(r, true)) set.push_back(x);
    };
    switch (c) {
      case 'd': set.insert(set.end(), kDigit.begin(), kDigit.end()); return std::nullopt;
      case 'D': add_negated(kDigit); return std::nullopt;
      case 'w': set.insert(set.end(), kWord.begin(), kWord.end()); return std::nullopt;
      case 'W': add_negated(kWord); return std::nullopt;
      case 's': set.insert(set.end(), kSpace.begin(), kSpace.end()); return std::nullopt;
      case 'S': add_negated(kSpace); return std::nullopt;
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'x': return read_hex(2);
      case 'u':
        if (eat('{')) {
          uint32_t v = 0;
          size_t digits = 0;
          while (!at_end() && peek() != '}' && digits < 7) v = v * 16 + read_hex(1), ++digits;
          if (!eat('}') || v > kMaxCodePoint) fail_at("a malformed \\u{...} escape");
          return v;
        }
        return read_hex(4);
      case 'b':
        if (in_class) return '\b';
        unsupported("a word boundary \\b");
      case 'B': unsupported("a word boundary \\B");
      case 'p':
      case 'P': unsupported("a Unicode property escape \\p{...}");
      case 'k': unsupported("a backreference");
      case 'A':
      case 'Z':
      case 'z':
      case 'G': unsupported(std::string("the anchor \\") + c);
      case 'c': {
        const char l = peek();
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) fail_at("a malformed \\c escape");
        ++pos_;
        return uint32_t(l) % 32;
      }
      default:
        if (c >= '1' && c <= '9') unsupported("a backreference");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail_at(std::string("an unknown escape \\") + c);
        --pos_;
        return read_utf8();
    }
  }

  int parse_class() {
    const bool negated = eat('^');
    std::vector<CodeRange> set;
    bool first = true;
    for (;;) {
      if (at_end()) fail_at("an unterminated character class");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      if (peek() == '[' && (peek(1) == ':' || peek(1) == '=' || peek(1) == '.')) unsupported("a POSIX class");
      first = false;
      std::optional<uint32_t> lo;
      if (eat('\\')) lo = parse_escape(set, true);
      else lo = read_utf8();
      if (!lo) continue;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        ++pos_;
        std::optional<uint32_t> hi;
        std::vector<CodeRange> ignored;
        if (eat('\\')) hi = parse_escape(ignored, true);
        else hi = read_utf8();
        if (!hi) fail_at("a class escape as a range end");
        if (*hi < *lo) fail_at("a character range out of order");
        set.push_back({*lo, *hi});
      } else {
        set.push_back({*lo, *lo});
      }
    }
    const std::vector<CodeRange> ranges = normalize_ranges(std::move(set), negated);
    if (ranges.empty()) return g_.nothing();
    return encoded_chars(g_, ranges, encoding_);
  }

  int parse_atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      return parse_group();
    }
    if (c == '[') {
      ++pos_;
      return parse_class();
    }
    if (c == '.') {
      ++pos_;
      return encoded_chars(g_, kDot, encoding_);
    }
    if (c == '*' || c == '+' || c == '?') fail_at("a quantifier with nothing to repeat");
    if (c == '{' && read_braces()) fail_at("a quantifier with nothing to repeat");
    if (c == '\\') {
      ++pos_;
      std::vector<CodeRange> set;
      if (auto single = parse_escape(set, false)) set.push_back({*single, *single});
      return encoded_chars(g_, normalize_ranges(std::move(set), false), encoding_);
    }
    const uint32_t cp = read_utf8();
    return encoded_chars(g_, {{cp, cp}}, encoding_);
  }

  Grammar& g_;
  std::string_view text_;
  CharEncoding encoding_;
  size_t pos_ = 0;
};

}  // namespace

int parse_regex(Grammar& g, std::string_view regex, CharEncoding encoding, RegexMatch match) {
  return RegexParser(g, regex, encoding).parse_top(match);
}

}  // namespace dcu::structured
