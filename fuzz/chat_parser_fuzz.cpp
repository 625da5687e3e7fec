// libFuzzer target: generated text through the streaming reasoning + tool-call parsers, cut into random
// chunks. Whatever the text, the final message must not depend on the chunking, every returned call's
// arguments must be JSON, and the deltas must open calls in order with the header first.
//
// Input: byte 0 = the parsers (reasoning: none/qwen3/deepseek_r1; prompt opened <think>; tool parser:
// none/hermes/qwen3_coder); byte 1 seeds the cut positions; the rest is the text.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string_view>

#include "text/parser_test_util.h"

namespace {

using Json = nlohmann::ordered_json;

// Tools with typed parameters (qwen3_coder converts values by the schema): those of the parser tests.
const Json& tools() {
  static const Json t = [] {
    std::ifstream in("tests/data/parsers/qwen_tool_call_renders.json");
    return Json::parse(in)["tools"];
  }();
  return t;
}

dcu::text::testing::ParserFactory factory_for(uint8_t mode) {
  static const char* kReasoning[] = {"", "qwen3", "deepseek_r1"};
  static const char* kTools[] = {"", "hermes", "qwen3_coder"};
  return dcu::text::testing::make_factory(mode & 1, kReasoning[(mode >> 1) % 3], kTools[(mode >> 3) % 3], tools());
}

void check_deltas(const dcu::text::testing::Streamed& s) {
  size_t calls = 0;
  for (const auto& d : s.deltas)
    for (const auto& tc : d.tool_calls) {
      if (tc.is_header()) {
        if (tc.index != int(calls) || !tc.arguments.empty()) std::abort();
        ++calls;
      } else if (tc.index + 1 != int(calls)) {
        std::abort();
      }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto factory = factory_for(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  std::mt19937 rng(data[1]);
  const auto one_shot = dcu::text::testing::stream(factory, text, {});
  const auto chunked = dcu::text::testing::stream(factory, text, dcu::text::testing::random_cuts(rng, text.size()));
  if (!(one_shot.message == chunked.message)) std::abort();
  for (const auto& call : one_shot.message.tool_calls)
    if (Json::parse(call.arguments, nullptr, false).is_discarded()) std::abort();
  check_deltas(one_shot);
  check_deltas(chunked);
  return 0;
}
