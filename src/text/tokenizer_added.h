#pragma once
// Added tokens (the `added_tokens` of tokenizer.json) and how they are found in text: leftmost-longest
// matching with the single_word / lstrip / rstrip rules of Hugging Face's AddedVocabulary.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dcu::text {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// A piece of text: either plain text to tokenize further, or one added token.
struct Segment {
  size_t start;
  size_t end;
  int32_t token_id;  // -1 for plain text
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is the text to look for (the content, normalized for normalized tokens) of `tokens[i]`.
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);

  bool empty() const { return tokens_.empty(); }
  // Splits `text` into segments covering it, in order; empty text gives no segment.
  void split(std::string_view text, std::vector<Segment>& segments) const;

 private:
  // Index into tokens_ of the longest pattern that starts at `pos`, or -1.
  int longest_at(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  std::vector<std::vector<int>> by_first_byte_;  // 256 lists of pattern indices, longest first
};

}  // namespace dcu::text
