// libFuzzer target: encode arbitrary bytes, decode the ids, and stream them through the detokenizer;
// checks that nothing crashes, decode output is valid UTF-8, and the stream equals decode.
// Build and run from the repository root (tokenizer: $DCU_FUZZ_TOKENIZER, default the demo model's):
//   clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Isrc fuzz/tokenizer_fuzz.cpp \
//       src/text/tokenizer*.cpp src/text/unicode.cpp src/text/detokenizer.cpp src/core/log.cpp \
//       -lfmt -lpcre2-8 -lutf8proc -o /tmp/tokenizer_fuzz
//   /tmp/tokenizer_fuzz -max_total_time=120 -max_len=4096

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace {

const dcu::text::Tokenizer& tokenizer() {
  static const dcu::text::Tokenizer instance = dcu::text::Tokenizer::load(
      std::getenv("DCU_FUZZ_TOKENIZER") ? std::getenv("DCU_FUZZ_TOKENIZER") : "models/dcuserve-demo/tokenizer.json");
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto& t = tokenizer();
  const std::vector<int32_t> ids = t.encode(input);
  const std::string decoded = t.decode(ids, false);
  if (!dcu::text::utf8_is_valid(decoded)) std::abort();
  // The stop string is the input's first two bytes when they are valid UTF-8, to exercise hold-back.
  std::vector<std::string> stops;
  if (size >= 2 && dcu::text::utf8_is_valid(input.substr(0, 2))) stops.emplace_back(input.substr(0, 2));
  dcu::text::StreamingDetokenizer detokenizer(t, size % 2 == 0, stops);
  std::string streamed;
  for (int32_t id : ids) streamed += detokenizer.push(id);
  streamed += detokenizer.flush();
  std::string expected = t.decode(ids, size % 2 == 0);
  if (!stops.empty()) expected = expected.substr(0, expected.find(stops[0]));
  if (streamed != expected) std::abort();
  return 0;
}
