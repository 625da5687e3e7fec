#pragma once
// The `pre_tokenizer` section of tokenizer.json: splits normalized text into the words BPE sees.
// Supported: Split (regex or literal pattern, all five delimiter behaviours, invert), ByteLevel
// (add_prefix_space, use_regex), Digits, and Sequence of these — with Hugging Face semantics.

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer_regex.h"

namespace dcu::text {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizer {
 public:
  static PreTokenizer from_json(const nlohmann::json& spec);  // null -> one word per segment

  // True when a ByteLevel step is present: words are then raw bytes for a byte-level BPE.
  bool byte_level() const { return byte_level_; }

  // Appends the words of one normalized segment to `words`. Views point into `text` or into strings
  // this call adds to `storage` (for a prefix space).
  void split(std::string_view text, std::vector<std::string_view>& words, std::deque<std::string>& storage) const;

 private:
  enum class Kind { Split, ByteLevel, Digits };
  struct Step {
    Kind kind = Kind::Split;
    std::shared_ptr<const Regex> regex;  // Split with a regex, ByteLevel with use_regex
    std::string literal;                 // Split with a string pattern
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;
    bool add_prefix_space = false;
  };

  static void add_spec(const nlohmann::json& spec, PreTokenizer& out);
  void apply(const Step& step, std::string_view word, std::vector<std::string_view>& out,
             std::deque<std::string>& storage) const;

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace dcu::text
