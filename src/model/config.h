#pragma once
// The text model's configuration, read from a Hugging Face config.json (top-level text config, or the
// `text_config` of Qwen3_5ForConditionalGeneration), plus generation_config.json defaults.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace dcu {

enum class LayerType { LinearAttention, FullAttention };

struct ModelConfig {
  std::string model_type;        // qwen3_5_text (or qwen3_5 wrapper)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;       // H
  int64_t intermediate_size = 0; // I
  int num_layers = 0;
  std::vector<LayerType> layer_types;
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;

  // Full attention.
  int num_heads = 0;             // nh (query heads)
  int num_kv_heads = 0;          // nkv
  int head_dim = 0;              // d
  int rotary_dim = 0;            // d * partial_rotary_factor
  float rope_theta = 10000.f;
  bool attn_output_gate = true;

  // Gated DeltaNet.
  int linear_num_key_heads = 0;    // Hk
  int linear_num_value_heads = 0;  // Hv
  int linear_key_head_dim = 0;     // dk
  int linear_value_head_dim = 0;   // dv
  int linear_conv_kernel = 0;      // Kc

  // Multi-token prediction: full-attention decoder blocks under mtp.* that draft tokens (0: none).
  int mtp_num_hidden_layers = 0;

  int linear_key_dim() const { return linear_num_key_heads * linear_key_head_dim; }
  int linear_value_dim() const { return linear_num_value_heads * linear_value_head_dim; }
  int linear_conv_dim() const { return 2 * linear_key_dim() + linear_value_dim(); }
  int num_full_attention_layers() const;
  int num_linear_attention_layers() const;

  // Parameters of the text model (embeddings, layers, final norm, lm_head if untied).
  int64_t parameter_count() const;
  // Bytes of KV cache per token (all attention layers, K and V) in `kv_dtype` (I8: codes plus one f32
  // scale per KV head).
  int64_t kv_bytes_per_token(DType kv_dtype) const;
  // Bytes of GDN state per sequence: fp32 recurrent state plus the conv window.
  int64_t state_bytes_per_sequence(int conv_bytes_per_element) const;

  // Checks the dimensions fit together; throws dcu::Error naming the field.
  void validate() const;
};

struct GenerationDefaults {
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> pad_token_id;
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<float> presence_penalty;
  std::optional<bool> do_sample;
  std::optional<int> max_new_tokens;
};

// Parses config.json text. `source` names the file in error messages.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
ModelConfig load_model_config(const std::string& model_dir);

// Sampling defaults and eos ids from generation_config.json (eos falling back to config.json); missing
// files give empty defaults; a malformed one is a dcu::Error.
GenerationDefaults load_generation_defaults(const std::string& model_dir);
// The same from the two files' text ("" for a missing file); `model_dir` names them in error messages.
GenerationDefaults parse_generation_defaults(const std::string& generation_config_text, const std::string& config_text,
                                             const std::string& model_dir);

// Built-in dimensions of the Qwen3.5 family for --random-weights ("0.8B", "2B", "4B", "9B", "27B").
std::optional<ModelConfig> builtin_config(const std::string& name);
std::vector<std::string> builtin_config_names();

}  // namespace dcu
