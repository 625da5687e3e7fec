#pragma once
// The `quantization_config` of a Hugging Face config.json, and how it says each Linear module is stored:
// dense, or quantized in one of the checkpoint formats model/checkpoint_formats.h decodes. Module names
// are the checkpoint's (e.g. "model.language_model.layers.3.mlp.gate_proj"), which is what the tools
// that write these configs (GPTQModel, AutoAWQ, llm-compressor) match against. Matching follows vLLM's
// loaders, cited at each rule in quantization_config.cpp.

#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace dcu {

enum class QuantMethod : uint8_t { None, CompressedTensors, Gptq, Awq, Fp8 };

// How one module's weight is laid out in the checkpoint (research/quant-mtp.md §1).
enum class StoredFormat : uint8_t {
  Dense,            // weight [N, K] BF16/F16/F32
  Gptq,             // qweight, qzeros, scales, g_idx
  AwqGemm,          // qweight, qzeros, scales (AutoAWQ GEMM nibble order)
  CtPackQuantized,  // compressed-tensors pack-quantized: weight_packed, weight_scale, weight_shape
  CtIntQuantized,   // compressed-tensors int-/naive-quantized: weight I8, weight_scale
  Fp8Block,         // weight F8_E4M3, weight_scale_inv per 128x128 block
};

std::string_view quant_method_name(QuantMethod m);
std::string_view stored_format_name(StoredFormat f);

struct ModuleQuant {
  StoredFormat format = StoredFormat::Dense;
  int bits = 0;
  int group_size = 0;  // k per scale; -1: one scale per row (GPTQ/AWQ -1, compressed-tensors "channel")
  bool sym = true;
  bool gptq_v1_zeros = false;  // GPTQ checkpoint_format "gptq": zero points are stored minus one

  bool quantized() const { return format != StoredFormat::Dense; }
  // "GPTQ 4-bit, group 128, asymmetric", for messages.
  std::string describe() const;
};

// A module-name pattern: an exact name, or a regex matched with Python's re.match (anchored at the
// start of the name, not required to reach its end).
struct NamePattern {
  std::string text;                // as written, "re:" prefix included
  std::optional<std::regex> regex;

  bool matches(std::string_view name) const;
};

// A GPTQModel `dynamic` entry. "-:regex" excludes the modules it matches from quantization; "+:regex"
// or a plain regex overrides the fields it sets. Patterns match with re.match semantics.
struct GptqDynamicRule {
  std::string key;  // as written, e.g. "-:.*attn.*"
  std::regex regex;
  bool exclude = false;
  std::optional<int> bits, group_size;
  std::optional<bool> sym;
};

struct GptqConfig {
  std::string checkpoint_format;  // "" or "gptq" (v1: zero points stored minus one), "gptq_v2"
  bool lm_head = false;           // lm_head is quantized too
  std::vector<GptqDynamicRule> dynamic;
  std::vector<std::string> modules_in_block_to_quantize;  // empty: every module; else substrings
};

// compressed-tensors activation quantization, recorded only: dcuserve runs these checkpoints with
// f16/bf16 activations, so static activation scales are not needed.
struct CtActivations {
  bool present = false;
  int bits = 0;
  std::string type, strategy;
  bool symmetric = true, dynamic = false;
};

struct CtScheme {
  std::vector<NamePattern> targets;  // "Linear" (the module class), exact module names, "re:" regexes
  std::string format;                // the group's own "format", else the top-level one
  int bits = 0;
  bool sym = true;
  int group_size = -1;  // -1: strategy "channel"
  CtActivations input_activations;
};

struct CompressedTensorsConfig {
  std::string format;  // top level: "pack-quantized", "int-quantized" or "naive-quantized"
  std::vector<CtScheme> schemes;  // config_groups, in order
  std::vector<NamePattern> ignore;
};

struct AwqConfig {
  bool zero_point = true;
  std::string version = "gemm";
  std::vector<std::string> modules_to_not_convert;  // substrings of the module name
};

struct Fp8Config {
  std::string activation_scheme = "dynamic";        // or "static"
  std::vector<std::string> modules_to_not_convert;  // or "ignored_layers"; dotted-path substrings
};

struct QuantizationConfig {
  QuantMethod method = QuantMethod::None;
  // GPTQ and AWQ (compressed-tensors keeps these per scheme; FP8 is 8-bit in 128x128 blocks).
  int bits = 0;
  int group_size = 0;
  bool sym = true;
  bool desc_act = false;  // recorded: the g_idx tensor, when present, decides the column order
  GptqConfig gptq;
  CompressedTensorsConfig ct;
  AwqConfig awq;
  Fp8Config fp8;

  // How the Linear module `name` is stored.
  ModuleQuant module_storage(std::string_view name) const;
};

// Parses the `quantization_config` (or the older compressed-tensors `compression_config`) of a
// config.json text, top-level or inside `text_config`; method None when there is none. `source` names
// the file in errors. Unsupported methods, formats and bit widths are errors naming the value and what
// is supported.
QuantizationConfig parse_quantization_config(const std::string& config_json, const std::string& source);

// The same, read from `model_dir`/config.json.
QuantizationConfig load_quantization_config(const std::string& model_dir);

}  // namespace dcu
