// libFuzzer target: arbitrary token ids (unknown and special ones included) streamed through the
// detokenizer with up to three stop strings (those that are valid UTF-8). The streamed text must be valid UTF-8 and equal the
// one-shot decode cut before the first stop string to complete, whatever ids arrive.
//
// Input: byte 0 = skip_special_tokens (bit 0) and the number of stop strings (bits 1-2); then each stop
// string as a length byte and its bytes; the rest, two bytes per id. Tokenizer: the demo model's.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/stop_string_reference.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace {

const dcu::text::Tokenizer& tokenizer() {
  static const dcu::text::Tokenizer instance = dcu::text::Tokenizer::load("models/dcuserve-demo/tokenizer.json");
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& t = tokenizer();
  const bool skip_special = data[0] & 1;
  const int stop_count = (data[0] >> 1) & 3;
  size_t pos = 1;
  std::vector<std::string> stops;
  for (int i = 0; i < stop_count && pos < size; ++i) {
    const size_t length = std::min<size_t>(data[pos++] % 9, size - pos);
    const std::string stop(reinterpret_cast<const char*>(data + pos), length);
    pos += length;
    // Stop strings come from JSON text, so they are valid UTF-8; a stray byte such as \xbf would match
    // inside a character (of U+FFFD, say), which neither the stream nor decode can cut at.
    if (dcu::text::utf8_is_valid(stop)) stops.push_back(stop);
  }
  // A few ids past the vocabulary and below zero, which the engine never sends but must not break decoding.
  std::vector<int32_t> ids;
  for (; pos + 1 < size; pos += 2)
    ids.push_back(int32_t((data[pos] | data[pos + 1] << 8) % (t.vocab_size() + 8)) - 4);

  dcu::text::StreamingDetokenizer detokenizer(t, skip_special, stops);
  std::string streamed;
  for (int32_t id : ids) streamed += detokenizer.push(id);
  streamed += detokenizer.flush();

  const std::string decoded = t.decode(ids, skip_special);
  const std::string expected = dcu::test::cut_at_first_completed_stop(decoded, stops);
  if (streamed != expected || !dcu::text::utf8_is_valid(streamed)) std::abort();
  // A stop string is never empty, so the text is cut exactly when one occurs.
  if (detokenizer.stopped() != (expected.size() < decoded.size())) std::abort();
  return 0;
}
