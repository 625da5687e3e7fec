#pragma once
// Test support: quantized checkpoints made here, so that loader tests need no device and no Python. A
// GPTQ copy of a 16-bit checkpoint folder packs the chosen modules as GPTQModel does (4-bit, symmetric,
// checkpoint_format "gptq": model/gptq_format.cpp cites the layout) from round-to-nearest codes, and its
// dequantized twin stores the very matrices those codes mean as F32, so the two must give the same
// logits up to f32 rounding.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::testing {

// One tensor of a safetensors file being written.
struct RawTensor {
  std::string dtype;  // as in the header: "BF16", "I32", ...
  std::vector<int64_t> shape;
  std::string bytes;
};

void write_safetensors(const std::filesystem::path& path, const std::map<std::string, RawTensor>& tensors);

// The MLP matrices are quantized, as in the official Qwen3.5 GPTQ checkpoints (dynamic "-:.*attn.*").
struct GptqCopyOptions {
  int group = 128;
  // g_idx groups input feature k as k % (K / group) instead of k / group (GPTQ act-order, desc_act).
  bool act_order = false;
  // The full-attention matrices too (dynamic "-:.*linear_attn.*").
  bool attention = false;
};

// Writes `dst` (config.json with a GPTQ quantization_config, model.safetensors) from the model folder
// `src`; when `dequantized` is not empty, also that folder with every quantized matrix as the F32 values
// its codes and scales give. Returns the quantization_config written.
nlohmann::json write_gptq_copy(const std::filesystem::path& src, const std::filesystem::path& dst,
                               const std::filesystem::path& dequantized = {}, const GptqCopyOptions& options = {});

}  // namespace dcu::testing
