#pragma once
// Turns generated token ids into text as they arrive, for streaming responses: it never returns part
// of a UTF-8 character, holds back text that may be the start of a stop string, and stops at the
// first stop string to complete (which, like everything after it, is never returned).
// The outputs of push() and flush() joined equal Tokenizer::decode of all ids cut at the start of the stop
// string occurrence that ends first (of those ending at the same byte, the one that starts first).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace dcu::text {

class StreamingDetokenizer {
 public:
  // `tokenizer` must outlive this object. Empty stop strings are ignored.
  StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens, std::vector<std::string> stop_strings);

  // The text that became printable with this token ("" once stopped).
  std::string push(int32_t id);
  // At the end of generation: what was held back; a cut UTF-8 character at the very end becomes U+FFFD.
  std::string flush();

  bool stopped() const { return stop_string_.has_value(); }
  // The stop string that ended the text, once stopped().
  const std::optional<std::string>& stop_string() const { return stop_string_; }

 private:
  std::string release(std::string text, bool at_end);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<std::string> stop_strings_;
  std::string pending_bytes_;  // the start of a UTF-8 character whose other bytes have not arrived
  std::string held_text_;      // decoded text that may begin a stop string
  std::optional<std::string> stop_string_;
};

}  // namespace dcu::text
