#include "structured/ebnf_parser.h"

#include <string>
#include <unordered_map>

#include "structured/grammar_error.h"
#include "structured/utf8_ranges.h"

namespace dcu::structured {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

class EbnfParser {
 public:
  explicit EbnfParser(std::string_view text) : text_(text) {}

  Grammar run() {
    skip_space();
    if (at_end()) grammar_error("the grammar is empty");
    while (!at_end()) {
      const size_t at = pos_;
      const std::string name = read_name();
      if (name.empty()) fail("expected a rule name");
      skip_space();
      if (text_.substr(pos_, 3) != "::=") {
        pos_ = at;
        fail("expected '::=' after the rule name");
      }
      pos_ += 3;
      const int rule = rule_id(name);
      if (g_.rule_body(rule) >= 0) fail("rule '" + name + "' is defined twice");
      g_.set_body(rule, parse_alternation());
      skip_space();
    }
    g_.root = g_.find_rule("root");
    if (g_.root < 0) grammar_error("the grammar has no 'root' rule");
    for (int r = 0; r < g_.rule_count(); ++r)
      if (g_.rule_body(r) < 0) grammar_error("rule '{}' is used but never defined", g_.rule_name(r));
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    grammar_error("grammar line {} column {}: {}", line, column, what);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void skip_space() {
    while (!at_end()) {
      if (peek() == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const size_t start = pos_;
    if (!name_start(peek())) return {};
    while (!at_end() && name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  int rule_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int id = g_.add_rule(name);
    ids_.emplace(name, id);
    return id;
  }

  // The next name starts a new rule when '::=' follows it.
  bool at_rule_start() {
    const size_t save = pos_;
    const std::string name = read_name();
    skip_space();
    const bool yes = !name.empty() && text_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }

  int parse_alternation() {
    std::vector<int> branches;
    for (;;) {
      branches.push_back(parse_sequence());
      skip_space();
      if (peek() != '|') break;
      ++pos_;
    }
    return g_.alt(std::move(branches));
  }

  int parse_sequence() {
    std::vector<int> items;
    for (;;) {
      skip_space();
      if (at_end() || peek() == '|' || peek() == ')' || at_rule_start()) break;
      items.push_back(parse_quantified(parse_atom()));
    }
    return g_.seq(std::move(items));
  }

  int read_int() {
    const size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') ++pos_;
    if (start == pos_ || pos_ - start > 6) fail("expected a repetition count");
    return std::stoi(std::string(text_.substr(start, pos_ - start)));
  }

  int parse_quantified(int atom) {
    for (;;) {
      skip_space();
      const char c = peek();
      if (c == '*') ++pos_, atom = g_.star(atom);
      else if (c == '+') ++pos_, atom = g_.plus(atom);
      else if (c == '?') ++pos_, atom = g_.optional(atom);
      else if (c == '{') {
        ++pos_;
        skip_space();
        const int lo = read_int();
        int hi = lo;
        skip_space();
        if (peek() == ',') {
          ++pos_;
          skip_space();
          hi = peek() == '}' ? -1 : read_int();
          skip_space();
        }
        if (peek() != '}') fail("expected '}'");
        ++pos_;
        if (hi >= 0 && hi < lo) fail("a repetition {n,m} with m < n");
        atom = g_.repeat(atom, lo, hi);
      } else {
        return atom;
      }
    }
  }

  uint32_t read_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("a malformed hex escape");
      v = v * 16 + uint32_t(d);
      ++pos_;
    }
    if (v > kMaxCodePoint) fail("an escape beyond U+10FFFF");
    return v;
  }

  uint32_t read_char() {
    if (at_end()) fail("unexpected end of the grammar");
    if (peek() == '\\') {
      ++pos_;
      const char c = peek();
      ++pos_;
      switch (c) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case 'f': return '\f';
        case 'v': return '\v';
        case 'b': return '\b';
        case '0': return 0;
        case 'x': return read_hex(2);
        case 'u': return read_hex(4);
        case 'U': return read_hex(8);
        case '\\':
        case '"':
        case '\'':
        case ']':
        case '[':
        case '-':
        case '^': return uint32_t(uint8_t(c));
        default: --pos_, fail(std::string("an unknown escape \\") + c);
      }
    }
    const auto b0 = uint8_t(peek());
    const int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos_ + size_t(len) > text_.size()) fail("invalid UTF-8");
    uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (uint8_t(text_[pos_ + size_t(i)]) & 0x3F);
    pos_ += size_t(len);
    return cp;
  }

  int parse_atom() {
    const char c = peek();
    if (c == '"' || c == '\'') {
      ++pos_;
      std::string bytes;
      while (peek() != c) {
        if (at_end() || peek() == '\n') fail("an unterminated string");
        append_utf8(bytes, read_char());
      }
      ++pos_;
      return g_.literal(std::move(bytes));
    }
    if (c == '[') {
      ++pos_;
      const bool negated = peek() == '^' && (++pos_, true);
      std::vector<CodeRange> ranges;
      while (peek() != ']') {
        if (at_end()) fail("an unterminated character class");
        const uint32_t lo = read_char();
        uint32_t hi = lo;
        if (peek() == '-' && peek(1) != ']') {
          ++pos_;
          hi = read_char();
          if (hi < lo) fail("a character range out of order");
        }
        ranges.push_back({lo, hi});
      }
      ++pos_;
      return g_.chars(std::move(ranges), negated);
    }
    if (c == '.') {
      ++pos_;
      return g_.chars({{0, kMaxCodePoint}});
    }
    if (c == '(') {
      ++pos_;
      const int inner = parse_alternation();
      skip_space();
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      return inner;
    }
    const std::string name = read_name();
    if (name.empty()) fail(std::string("unexpected '") + c + "'");
    return g_.ref(rule_id(name));
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace

Grammar parse_ebnf(std::string_view text) { return EbnfParser(text).run(); }

}  // namespace dcu::structured
