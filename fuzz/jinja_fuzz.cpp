// libFuzzer target: parse and render arbitrary template text with a fixed chat context.
// Any input must end in output or a dcu::Error: no crash, no hang, no unbounded memory.
//
// clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
//   -Isrc fuzz/jinja_fuzz.cpp src/text/jinja/*.cpp -lfmt -lutf8proc -o /tmp/jinja_fuzz
// mkdir -p /tmp/jinja_corpus && cp tests/data/jinja/templates/*.jinja /tmp/jinja_corpus/
// /tmp/jinja_fuzz /tmp/jinja_corpus -max_total_time=300 -max_len=4096 -timeout=10 -rss_limit_mb=2048
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "text/jinja/template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json c = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": [{"type": "text", "text": "Hi ✓"}]},
      {"role": "assistant", "content": "", "reasoning_content": "think",
       "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
      {"role": "tool", "content": "{\"ok\": 1}"}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"
  })");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dcu::jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 200'000;
  try {
    dcu::jinja::Template t(std::string(reinterpret_cast<const char*>(data), size), limits);
    t.render(context());
  } catch (const dcu::Error&) {
  }
  return 0;
}
