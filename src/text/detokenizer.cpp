#include "text/detokenizer.h"

#include <algorithm>

#include "text/unicode.h"

namespace dcu::text {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                           std::vector<std::string> stop_strings)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {
  for (auto& stop : stop_strings)
    if (!stop.empty()) stop_strings_.push_back(std::move(stop));
}

std::string StreamingDetokenizer::push(int32_t id) {
  // Unknown ids and skipped special tokens add nothing, as in Tokenizer::decode.
  if (stopped() || !tokenizer_.has_id(id) || (skip_special_tokens_ && tokenizer_.is_special(id))) return {};
  pending_bytes_ += tokenizer_.token_bytes(id);
  std::string text;
  size_t pos = 0;
  while (pos < pending_bytes_.size()) {
    const Utf8Step step = utf8_step(pending_bytes_, pos);
    if (step.kind == Utf8Step::Kind::Truncated) break;  // wait for the rest of the character
    if (step.kind == Utf8Step::Kind::Valid) text.append(pending_bytes_, pos, step.length);
    else text.append(kReplacementChar);
    pos += step.length;
  }
  pending_bytes_.erase(0, pos);
  return release(std::move(text), false);
}

std::string StreamingDetokenizer::flush() {
  if (stopped()) return {};
  std::string text = pending_bytes_.empty() ? std::string() : std::string(kReplacementChar);
  pending_bytes_.clear();
  return release(std::move(text), true);
}

std::string StreamingDetokenizer::release(std::string text, bool at_end) {
  held_text_ += text;
  // Generation ends as soon as a stop string appears, so the one that completes first wins, even over a
  // longer one that began earlier and is not complete yet; of those ending at the same byte, the longest.
  size_t first = std::string::npos;
  size_t first_end = std::string::npos;
  for (const std::string& stop : stop_strings_) {
    const size_t pos = held_text_.find(stop);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stop.size();
    if (end < first_end || (end == first_end && pos < first)) {
      first = pos;
      first_end = end;
      stop_string_ = stop;
    }
  }
  if (first != std::string::npos) {
    std::string out = held_text_.substr(0, first);
    held_text_.clear();
    pending_bytes_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  if (!at_end) {
    for (const std::string& stop : stop_strings_) {
      for (size_t k = std::min(stop.size() - 1, held_text_.size()); k > keep; --k) {
        if (held_text_.compare(held_text_.size() - k, k, stop, 0, k) == 0) {
          keep = k;
          break;
        }
      }
    }
  }
  std::string out = held_text_.substr(0, held_text_.size() - keep);
  held_text_.erase(0, held_text_.size() - keep);
  return out;
}

}  // namespace dcu::text
