#include "text/unicode.h"

#include <cstdlib>

#include <utf8proc.h>

#include "core/error.h"

namespace dcu::text {

namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Allowed range of the second byte of a multi-byte sequence, per lead byte (Unicode table 3-7).
bool second_byte_ok(unsigned char lead, unsigned char b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return is_continuation(b);
}

}  // namespace

Utf8Step utf8_step(std::string_view s, size_t pos) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  if (lead < 0x80) return {Utf8Step::Kind::Valid, 1, lead};
  size_t width = 0;
  char32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    width = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    width = 3;
    code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    width = 4;
    code = lead & 0x07;
  } else {
    return {Utf8Step::Kind::Invalid, 1, 0};
  }
  for (size_t i = 1; i < width; ++i) {
    if (pos + i >= s.size()) return {Utf8Step::Kind::Truncated, i, 0};
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if (!(i == 1 ? second_byte_ok(lead, b) : is_continuation(b))) return {Utf8Step::Kind::Invalid, i, 0};
    code = (code << 6) | (b & 0x3F);
  }
  return {Utf8Step::Kind::Valid, width, code};
}

bool utf8_is_valid(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind != Utf8Step::Kind::Valid) return false;
    pos += step.length;
  }
  return true;
}

std::string utf8_replace_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind == Utf8Step::Kind::Valid)
      out.append(s.substr(pos, step.length));
    else
      out.append(kReplacementChar);
    pos += step.length;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

char32_t utf8_next(std::string_view s, size_t& pos) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  const size_t width = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  char32_t code = lead & (0x7F >> width);
  for (size_t i = 1; i < width; ++i) code = (code << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  pos += width;
  return code;
}

bool is_white_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

namespace {

std::string normalize_with_utf8proc(std::string_view s, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &result, static_cast<utf8proc_option_t>(options));
  if (length < 0) fail("Unicode normalization failed: {}", utf8proc_errmsg(length));
  std::string out(reinterpret_cast<const char*>(result), static_cast<size_t>(length));
  std::free(result);
  return out;
}

// Characters every normal form leaves unchanged and that never combine with the character before
// them (combining class 0, no decomposition that matters, not the second half of a composition):
// text can be normalized in pieces cut just before them. Covers Latin-1, Latin Extended, IPA,
// CJK ideographs, Hangul syllables and most emoji.
bool is_normalization_boundary(char32_t c, NormalForm form) {
  if (c < 0x300) {  // decomposing forms change é, compatibility forms change ½ and ĳ
    if (form == NormalForm::NFC) return true;
    return c < (form == NormalForm::NFD ? 0xC0u : 0xA0u);
  }
  if (c >= 0x4E00 && c <= 0x9FFF) return true;
  if (c >= 0xAC00 && c <= 0xD7A3) return form == NormalForm::NFC || form == NormalForm::NFKC;
  return c >= 0x1F300 && c <= 0x1FAFF;
}

}  // namespace

std::string normalize(std::string_view s, NormalForm form) {
  std::string out;
  out.reserve(s.size());
  // Boundary characters are copied; each stretch from the boundary character before a non-boundary
  // one up to the next boundary character goes through utf8proc.
  size_t piece_start = 0;
  size_t previous_start = 0;
  bool piece_stable = true;  // the current piece holds boundary characters only
  auto flush = [&](size_t end) {
    const std::string_view piece = s.substr(piece_start, end - piece_start);
    if (piece_stable) out.append(piece);
    else out.append(normalize_with_utf8proc(piece, form));
    piece_start = end;
  };
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const bool boundary = is_normalization_boundary(utf8_next(s, pos), form);
    if (!boundary && piece_stable) {
      flush(previous_start);  // the character before may compose with this one: it joins the piece
      piece_stable = false;
    } else if (boundary && !piece_stable) {
      flush(start);
      piece_stable = true;
    }
    previous_start = start;
  }
  flush(s.size());
  return out;
}

namespace {

struct ByteLevelAlphabet {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 512> to_byte{};  // every alphabet character is below U+0200

  ByteLevelAlphabet() {
    to_byte.fill(-1);
    char32_t next_extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next_extra++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet instance;
  return instance;
}

}  // namespace

const std::array<char32_t, 256>& byte_to_char() { return alphabet().to_char; }

int char_to_byte(char32_t c) { return c < 512 ? alphabet().to_byte[c] : -1; }

}  // namespace dcu::text
