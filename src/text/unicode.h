#pragma once
// UTF-8 and Unicode helpers for the tokenizer: lossy UTF-8 decoding with the same replacement rule as
// Hugging Face (Rust String::from_utf8_lossy, Python errors="replace"), character classes, normalization
// forms and the GPT-2 byte <-> character mapping of byte-level BPE.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dcu::text {

// One step of UTF-8 decoding at a position. Invalid sequences are cut at the first byte that cannot
// continue them ("maximal subpart" rule), so each Invalid step becomes exactly one U+FFFD.
struct Utf8Step {
  enum class Kind { Valid, Invalid, Truncated };  // Truncated: a valid start cut by the end of the input
  Kind kind;
  size_t length;   // bytes consumed (>= 1)
  char32_t code;   // the code point when Valid
};
Utf8Step utf8_step(std::string_view s, size_t pos);

bool utf8_is_valid(std::string_view s);
// Replaces every invalid or truncated sequence by U+FFFD, as HF decode does.
std::string utf8_replace_invalid(std::string_view s);
void utf8_append(std::string& out, char32_t code);
// Decodes the code point at `pos` of a string known to be valid UTF-8 and advances `pos`.
char32_t utf8_next(std::string_view s, size_t& pos);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

bool is_white_space(char32_t c);  // the Unicode White_Space property (Rust's char::is_whitespace, regex \s)
bool is_word_char(char32_t c);    // Rust regex \w: letters, marks, decimal digits, connectors
bool is_numeric(char32_t c);      // Rust char::is_numeric: general categories Nd, Nl, No

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view valid_utf8, NormalForm form);

// GPT-2 byte-level alphabet: every byte maps to one printable character.
const std::array<char32_t, 256>& byte_to_char();
// The byte a byte-level character stands for, or -1 when the character is outside the alphabet.
int char_to_byte(char32_t c);

}  // namespace dcu::text
