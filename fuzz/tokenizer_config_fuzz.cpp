// libFuzzer target: arbitrary tokenizer_config.json text (chat templates, named special tokens,
// added_tokens_decoder). Any input must end in a config or a dcu::Error: no crash, no hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "text/tokenizer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)dcu::text::TokenizerConfig::from_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const dcu::Error&) {
  }
  return 0;
}
