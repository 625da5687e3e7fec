// libFuzzer target: arbitrary config.json text through the model-config and quantization_config
// parsers (and, when both accept it, the per-module storage answers the loader asks for), and the same
// text as generation_config.json. Any input must end in a parsed config or a dcu::Error: no crash, no
// hang, no undefined conversion of an out-of-range number.
//
// Built and run by scripts/fuzz.sh; seed corpus fuzz/corpus/model_config (the config.json and
// generation_config.json files of tests/data and models/).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "model/config.h"
#include "model/quantization_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const dcu::ModelConfig config = dcu::parse_model_config(text, "fuzz");
    config.validate();
  } catch (const dcu::Error&) {
  }
  try {
    const dcu::QuantizationConfig q = dcu::parse_quantization_config(text, "fuzz");
    for (const char* module : {"model.language_model.layers.0.mlp.gate_proj", "model.layers.3.self_attn.q_proj",
                               "model.language_model.layers.1.linear_attn.in_proj_qkv", "lm_head"})
      (void)q.module_storage(module).describe();
  } catch (const dcu::Error&) {
  }
  try {
    (void)dcu::parse_generation_defaults(text, text, "fuzz");
  } catch (const dcu::Error&) {
  }
  return 0;
}
