#include "text/jinja/lexer.h"

#include <cstring>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

// Byte length of the code point starting at `pos` if it is whitespace (Python's \s), else 0.
size_t space_at(const std::string& s, size_t pos) {
  unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) return is_py_space(c) ? 1 : 0;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  if (pos + n > s.size()) return 0;
  auto cps = utf8_decode(std::string_view(s).substr(pos, n));
  return cps.size() == 1 && is_py_space(cps[0]) ? n : 0;
}

size_t skip_spaces(const std::string& s, size_t pos) {
  while (pos < s.size()) {
    size_t n = space_at(s, pos);
    if (!n) break;
    pos += n;
  }
  return pos;
}

// Python's str.rstrip() on s[begin, end): returns the new end.
size_t rstrip_end(const std::string& s, size_t begin, size_t end) {
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (space_at(s, start) != end - start) break;
    end = start;
  }
  return end;
}

bool all_spaces(const std::string& s, size_t begin, size_t end) {
  if (begin >= end) return false;  // Python's \s+ needs one character
  return skip_spaces(s.substr(0, end), begin) == end;
}

int count_newlines(const std::string& s, size_t begin, size_t end) {
  int n = 0;
  for (size_t i = begin; i < end; ++i) n += s[i] == '\n';
  return n;
}

bool starts_with(const std::string& s, size_t pos, const char* prefix) {
  return s.compare(pos, std::strlen(prefix), prefix) == 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's unicode-escape decoding of a string literal body.
std::string decode_escapes(const std::string& raw, int line) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out.push_back(c);
      continue;
    }
    char e = raw[++i];
    auto hex = [&](size_t digits) {
      uint32_t v = 0;
      for (size_t k = 1; k <= digits; ++k) {
        char h = i + k < raw.size() ? raw[i + k] : '\0';
        int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (d < 0) throw TemplateError(line, "invalid escape sequence in string literal");
        v = v * 16 + uint32_t(d);
      }
      i += digits;
      if (v > 0x10FFFF) throw TemplateError(line, "invalid escape sequence in string literal");
      utf8_append(out, char32_t(v));
    };
    switch (e) {
      case '\n': break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'v': out.push_back('\v'); break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = uint32_t(e - '0');
          for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) v = v * 8 + uint32_t(raw[++i] - '0');
          utf8_append(out, char32_t(v));
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize(source)) {}

  std::vector<Token> run() {
    try {
      while (pos_ < src_.size()) lex_data();
    } catch (const TemplateError& e) {
      tokens_.push_back(Token{TokenType::Error, e.message(), {}, e.line()});
      return std::move(tokens_);
    }
    // jinja2 gives the end of the template the line of the last token.
    tokens_.push_back(Token{TokenType::End, "", {}, tokens_.empty() ? 1 : tokens_.back().line});
    return std::move(tokens_);
  }

 private:
  static std::string normalize(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        out.push_back('\n');
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        out.push_back(source[i]);
      }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
    return out;
  }

  void emit(TokenType type, std::string text, int line) { tokens_.push_back(Token{type, std::move(text), {}, line}); }

  // Data up to the next tag, with the tag's whitespace control applied to the data's tail.
  void emit_data_before_tag(size_t begin, size_t end, char sign, bool lstrip_allowed) {
    size_t data_end = end;
    if (sign == '-') {
      data_end = rstrip_end(src_, begin, end);
    } else if (sign != '+' && lstrip_allowed) {
      size_t nl = src_.rfind('\n', end == 0 ? 0 : end - 1);
      size_t l_pos = (nl == std::string::npos || nl < begin) ? begin : nl + 1;
      if ((l_pos > begin || line_starting_) && all_spaces(src_, l_pos, end)) data_end = l_pos;
    }
    if (data_end > begin) emit(TokenType::Data, src_.substr(begin, data_end - begin), line_);
    line_ += count_newlines(src_, begin, end);
  }

  // Matches `{%(-|+|)\s*raw\s*(-%}\s*|%})` at pos; returns the end or npos.
  size_t match_raw_begin(size_t pos) const {
    size_t p = pos + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_spaces(src_, p);
    if (!starts_with(src_, p, "raw")) return std::string::npos;
    p = skip_spaces(src_, p + 3);
    if (starts_with(src_, p, "-%}")) return skip_spaces(src_, p + 3);
    if (starts_with(src_, p, "%}")) return p + 2;
    return std::string::npos;
  }

  void lex_data() {
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        emit(TokenType::Data, src_.substr(pos_), line_);
        line_ += count_newlines(src_, pos_, src_.size());
        pos_ = src_.size();
        return;
      }
      char kind = src_[tag + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
      ++tag;
    }
    char kind = src_[tag + 1];
    char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : '\0';
    size_t raw_end = kind == '%' ? match_raw_begin(tag) : std::string::npos;
    emit_data_before_tag(pos_, tag, sign, kind != '{');
    size_t after = tag + 2 + (sign ? 1 : 0);
    if (raw_end != std::string::npos) {
      line_ += count_newlines(src_, tag, raw_end);
      line_starting_ = src_[raw_end - 1] == '\n';
      pos_ = raw_end;
      lex_raw();
    } else if (kind == '#') {
      lex_comment(after);
    } else {
      int line = line_;
      emit(kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin, "", line);
      pos_ = after;
      lex_tag(kind == '{');
    }
  }

  void lex_raw() {
    size_t search = pos_;
    while (true) {
      size_t p = src_.find("{%", search);
      if (p == std::string::npos) throw TemplateError(line_, "Missing end of raw directive");
      size_t q = p + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : '\0';
      if (sign) ++q;
      q = skip_spaces(src_, q);
      if (starts_with(src_, q, "endraw")) {
        q = skip_spaces(src_, q + 6);
        size_t end = std::string::npos;
        if (starts_with(src_, q, "+%}")) end = q + 3;
        else if (starts_with(src_, q, "-%}")) end = skip_spaces(src_, q + 3);
        else if (starts_with(src_, q, "%}")) end = q + 2 + (q + 2 < src_.size() && src_[q + 2] == '\n');
        if (end != std::string::npos) {
          emit_data_before_tag(pos_, p, sign, true);
          line_ += count_newlines(src_, p, end);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      search = p + 2;
    }
  }

  void lex_comment(size_t from) {
    for (size_t p = from; p + 1 < src_.size(); ++p) {
      size_t end = std::string::npos;
      if (starts_with(src_, p, "+#}")) end = p + 3;
      else if (starts_with(src_, p, "-#}")) end = skip_spaces(src_, p + 3);
      else if (starts_with(src_, p, "#}")) end = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n');
      if (end == std::string::npos) continue;
      line_ += count_newlines(src_, pos_, end);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    throw TemplateError(line_, "Missing end of comment tag");
  }

  // Tokens inside {{ }} or {% %}, up to the matching end marker.
  void lex_tag(bool variable) {
    std::vector<char> balance;
    while (pos_ < src_.size()) {
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (variable) {
          if (starts_with(src_, pos_, "-}}")) end = skip_spaces(src_, pos_ + 3);
          else if (starts_with(src_, pos_, "}}")) end = pos_ + 2;
        } else {
          if (starts_with(src_, pos_, "+%}")) end = pos_ + 3;
          else if (starts_with(src_, pos_, "-%}")) end = skip_spaces(src_, pos_ + 3);
          else if (starts_with(src_, pos_, "%}")) end = pos_ + 2 + (pos_ + 2 < src_.size() && src_[pos_ + 2] == '\n');
        }
        if (end != std::string::npos) {
          emit(variable ? TokenType::VariableEnd : TokenType::BlockEnd, "", line_);
          line_ += count_newlines(src_, pos_, end);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      if (size_t n = space_at(src_, pos_)) {
        line_ += src_[pos_] == '\n';
        pos_ += n;
        line_starting_ = false;
        continue;
      }
      line_starting_ = false;
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
  }

  bool lex_digits(size_t& p) const {  // (\d+_)*\d+
    if (p >= src_.size() || !is_digit(src_[p])) return false;
    while (true) {
      while (p < src_.size() && is_digit(src_[p])) ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && is_digit(src_[p + 1])) {
        ++p;
        continue;
      }
      return true;
    }
  }

  static std::string without_underscores(std::string s) {
    std::erase(s, '_');
    return s;
  }

  bool lex_number() {
    if (!is_digit(src_[pos_])) return false;
    // float: digits ( (.digits)? e[+-]?digits | .digits )
    size_t p = pos_;
    lex_digits(p);
    size_t q = p;
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
      ++q;
      lex_digits(q);
      is_float = true;
    }
    size_t e = q;
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      ++e;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (lex_digits(e)) {
        q = e;
        is_float = true;
      }
    }
    bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    if (is_float && !after_dot) {
      std::string text = without_underscores(src_.substr(pos_, q - pos_));
      Token t{TokenType::Float, text, Value::from_float(std::strtod(text.c_str(), nullptr)), line_};
      tokens_.push_back(std::move(t));
      pos_ = q;
      return true;
    }
    // integer
    int base = 10;
    size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size()) {
      char b = char(src_[pos_ + 1] | 0x20);
      base = b == 'b' ? 2 : b == 'o' ? 8 : b == 'x' ? 16 : 10;
    }
    std::string digits;
    if (base != 10) {
      p = pos_ + 2;
      auto ok = [&](char c) {
        c = char(c | 0x20);
        return base == 2 ? (c == '0' || c == '1') : base == 8 ? (c >= '0' && c <= '7') : (is_digit(c) || (c >= 'a' && c <= 'f'));
      };
      while (p < src_.size() && (ok(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && ok(src_[p + 1])))) {
        if (src_[p] != '_') digits.push_back(src_[p]);
        ++p;
      }
      if (digits.empty()) base = 10;
    }
    if (base == 10) {
      p = pos_;
      if (src_[p] == '0') {  // 0(_?0)*
        ++p;
        while (p < src_.size() && (src_[p] == '0' || (src_[p] == '_' && p + 1 < src_.size() && src_[p + 1] == '0'))) ++p;
        digits.assign(1, '0');
      } else {
        lex_digits(p);
        digits = without_underscores(src_.substr(pos_, p - pos_));
      }
    }
    errno = 0;
    long long v = std::strtoll(digits.c_str(), nullptr, base);
    if (errno == ERANGE) throw TemplateError(line_, "integer literal too large");
    tokens_.push_back(Token{TokenType::Integer, src_.substr(start, p - start), Value::from_int(v), line_});
    pos_ = p;
    return true;
  }

  bool lex_name() {
    if (!is_name_start(src_[pos_])) return false;
    size_t p = pos_;
    while (p < src_.size() && is_name_char(src_[p])) ++p;
    emit(TokenType::Name, src_.substr(pos_, p - pos_), line_);
    pos_ = p;
    return true;
  }

  bool lex_string() {
    char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2 : 1;
    if (p >= src_.size()) return false;  // unterminated: reported as an unexpected character
    emit(TokenType::String, decode_escapes(src_.substr(pos_ + 1, p - pos_ - 1), line_), line_);
    line_ += count_newlines(src_, pos_, p);
    pos_ = p + 1;
    return true;
  }

  void lex_operator(std::vector<char>& balance) {
    static const char* two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two)
      if (starts_with(src_, pos_, op)) {
        emit(TokenType::Operator, op, line_);
        pos_ += 2;
        return;
      }
    char c = src_[pos_];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c) || c == '\0')
      throw TemplateError(line_, fmt::format("unexpected char '{}' at {}", std::string(1, c), pos_));
    if (c == '{' || c == '(' || c == '[') balance.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
    if (c == '}' || c == ')' || c == ']') {
      if (balance.empty()) throw TemplateError(line_, fmt::format("unexpected '{}'", c));
      char expected = balance.back();
      balance.pop_back();
      if (expected != c) throw TemplateError(line_, fmt::format("unexpected '{}', expected '{}'", c, expected));
    }
    emit(TokenType::Operator, std::string(1, c), line_);
    ++pos_;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace dcu::jinja
