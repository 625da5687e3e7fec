#pragma once
// A PCRE2 pattern compiled with UTF + UCP (Unicode classes for \s, \w, \d) and JIT, used by the
// tokenizer's pre-tokenizers in place of the Oniguruma engine Hugging Face tokenizers uses.
// Known difference: PCRE2's \s also matches U+180E MONGOLIAN VOWEL SEPARATOR, which is no longer
// White_Space in Unicode (and so not \s for Oniguruma).

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pcre2_real_code_8;

namespace dcu::text {

struct Span {
  size_t start;
  size_t end;
};

class Regex {
 public:
  explicit Regex(const std::string& pattern);  // throws dcu::Error on a bad pattern
  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  // Replaces `matches` with the non-overlapping matches in `text` (valid UTF-8), left to right, with
  // the empty-match rules of Oniguruma's find iterator. Safe to call from several threads at once.
  void find_all(std::string_view text, std::vector<Span>& matches) const;

 private:
  pcre2_real_code_8* code_ = nullptr;
};

}  // namespace dcu::text
