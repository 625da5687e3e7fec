#pragma once
// Small string helpers shared by the incremental parsers: they decide whether a tag has arrived,
// may still arrive (the text so far is a prefix of it), or cannot.

#include <algorithm>
#include <string_view>

namespace dcu::text {

inline bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view lstrip(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_json_space(s[i])) ++i;
  return s.substr(i);
}

inline std::string_view rstrip(std::string_view s) {
  size_t n = s.size();
  while (n > 0 && is_json_space(s[n - 1])) --n;
  return s.substr(0, n);
}

inline std::string_view strip(std::string_view s) { return rstrip(lstrip(s)); }

// Length of the longest suffix of `text` that is a proper prefix of `tag`: the part of the text that
// must be held back because the next chunk could complete the tag.
inline size_t partial_tag_overlap(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

enum class TagMatch { Yes, Maybe, No };

// Does `text` start with `tag`? Maybe: `text` is a proper prefix of it, so more text must arrive.
inline TagMatch match_tag(std::string_view text, std::string_view tag) {
  if (text.size() >= tag.size()) return text.substr(0, tag.size()) == tag ? TagMatch::Yes : TagMatch::No;
  return tag.substr(0, text.size()) == text ? TagMatch::Maybe : TagMatch::No;
}

}  // namespace dcu::text
