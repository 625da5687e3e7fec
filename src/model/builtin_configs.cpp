// Dimensions of the Qwen3.5 dense family (research/qwen35-spec.md §1.2), for --random-weights runs.

#include "model/config.h"

#include <map>

namespace dcu {
namespace {

struct FamilyMember {
  int64_t hidden, intermediate;
  int layers, heads, kv_heads, gdn_value_heads;
  bool tied;
};

const std::map<std::string, FamilyMember>& family() {
  static const std::map<std::string, FamilyMember> members = {
      {"0.8B", {1024, 3584, 24, 8, 2, 16, true}},  {"2B", {2048, 6144, 24, 8, 2, 16, true}},
      {"4B", {2560, 9216, 32, 16, 4, 32, true}},   {"9B", {4096, 12288, 32, 16, 4, 32, false}},
      {"27B", {5120, 17408, 64, 24, 4, 48, false}},
  };
  return members;
}

}  // namespace

std::optional<ModelConfig> builtin_config(const std::string& name) {
  auto it = family().find(name);
  if (it == family().end()) return std::nullopt;
  const FamilyMember& m = it->second;
  ModelConfig c;
  c.model_type = "qwen3_5_text";
  c.vocab_size = 248320;
  c.hidden_size = m.hidden;
  c.intermediate_size = m.intermediate;
  c.num_layers = m.layers;
  for (int i = 0; i < m.layers; ++i)
    c.layer_types.push_back((i + 1) % 4 == 0 ? LayerType::FullAttention : LayerType::LinearAttention);
  c.rms_norm_eps = 1e-6f;
  c.tie_word_embeddings = m.tied;
  c.max_position_embeddings = 262144;
  c.num_heads = m.heads;
  c.num_kv_heads = m.kv_heads;
  c.head_dim = 256;
  c.rotary_dim = 64;
  c.rope_theta = 1e7f;
  c.linear_num_key_heads = 16;
  c.linear_num_value_heads = m.gdn_value_heads;
  c.linear_key_head_dim = 128;
  c.linear_value_head_dim = 128;
  c.linear_conv_kernel = 4;
  c.mtp_num_hidden_layers = 1;  // every Qwen3.5 checkpoint ships one MTP block
  c.validate();
  return c;
}

std::vector<std::string> builtin_config_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : family()) names.push_back(name);
  return names;
}

}  // namespace dcu
