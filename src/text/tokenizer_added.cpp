#include "text/tokenizer_added.h"

#include <algorithm>

#include "text/unicode.h"

namespace dcu::text {

namespace {

// Rust regex `\w$` / `^\w` and `\s` on valid UTF-8, as HF's single_word / lstrip / rstrip use them.
bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t pos = s.size() - 1;
  while (pos > 0 && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return is_word_char(utf8_next(s, pos));
}

bool starts_with_word(std::string_view s) {
  size_t pos = 0;
  return !s.empty() && is_word_char(utf8_next(s, pos));
}

// Start of the trailing run of white space.
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t pos = end - 1;
    while (pos > 0 && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
    size_t cursor = pos;
    if (!is_white_space(utf8_next(s, cursor))) break;
    end = pos;
  }
  return end;
}

// Length of the leading run of white space.
size_t leading_space_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t cursor = pos;
    if (!is_white_space(utf8_next(s, cursor))) break;
    pos = cursor;
  }
  return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)), by_first_byte_(256) {
  for (size_t i = 0; i < patterns_.size(); ++i)
    if (!patterns_[i].empty()) by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(static_cast<int>(i));
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](int a, int b) { return patterns_[a].size() > patterns_[b].size(); });
}

int AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  for (int index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
    const std::string& pattern = patterns_[index];
    if (text.compare(pos, pattern.size(), pattern) == 0) return index;
  }
  return -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& segments) const {
  segments.clear();
  size_t start_offset = 0;
  if (!tokens_.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      const int index = longest_at(text, pos);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& token = tokens_[index];
      size_t start = pos;
      size_t stop = pos + patterns_[index].size();
      pos = stop;  // matching resumes after the raw match, whatever stripping does below
      if (token.single_word) {
        const bool space_before = start == 0 || !ends_with_word(text.substr(0, start));
        const bool space_after = stop == text.size() || !starts_with_word(text.substr(stop));
        if (!space_before || !space_after) continue;
      }
      if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
      if (token.rstrip) stop += leading_space_length(text.substr(stop));
      if (start_offset < start) segments.push_back({start_offset, start, -1});
      segments.push_back({start, stop, token.id});
      start_offset = stop;
    }
  }
  if (start_offset < text.size()) segments.push_back({start_offset, text.size(), -1});
}

}  // namespace dcu::text
