#include "model/config.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu {
namespace {

using json = nlohmann::json;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A field's value as T. Numbers must fit T (an integer type takes only integers): converting one that
// does not is undefined behaviour, which a malformed config.json must not reach.
template <typename T>
T field_value(const json& v, const char* key, const std::string& source) {
  auto wrong = [&]() -> T { fail("{}: field \"{}\" has the wrong type or is out of range ({})", source, key, v.dump()); };
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      fail("{}: field \"{}\" has the wrong type ({})", source, key, v.type_name());
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max()) ? T(v.get<uint64_t>()) : wrong();
    if (!v.is_number_integer()) return wrong();
    const int64_t x = v.get<int64_t>();
    return x >= std::numeric_limits<T>::min() && x <= std::numeric_limits<T>::max() ? T(x) : wrong();
  } else {
    static_assert(std::is_floating_point_v<T>);
    if (!v.is_number() || !(std::fabs(v.get<double>()) <= std::numeric_limits<T>::max())) return wrong();
    return T(v.get<double>());
  }
}

template <typename T>
T required(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) fail("{}: missing required field \"{}\"", source, key);
  return field_value<T>(*it, key, source);
}

template <typename T>
T optional_field(const json& j, const char* key, T fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return field_value<T>(*it, key, source);
}

// Token ids: an integer or a list of them; anything else, or out of range, is left out.
std::vector<int32_t> id_list(const json& j) {
  auto is_id = [](const json& v) {
    return v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max())
                                  : v.is_number_integer() && v.get<int64_t>() >= 0 &&
                                        v.get<int64_t>() <= std::numeric_limits<int32_t>::max();
  };
  std::vector<int32_t> ids;
  if (is_id(j)) ids.push_back(j.get<int32_t>());
  if (j.is_array())
    for (const auto& v : j)
      if (is_id(v)) ids.push_back(v.get<int32_t>());
  return ids;
}

}  // namespace

int ModelConfig::num_full_attention_layers() const {
  int n = 0;
  for (auto t : layer_types) n += t == LayerType::FullAttention;
  return n;
}

int ModelConfig::num_linear_attention_layers() const { return num_layers - num_full_attention_layers(); }

int64_t ModelConfig::parameter_count() const {
  const int64_t H = hidden_size, I = intermediate_size;
  int64_t attn = H * (int64_t(num_heads) * head_dim * 2) + 2 * H * (int64_t(num_kv_heads) * head_dim) +
                 int64_t(num_heads) * head_dim * H + 2 * head_dim;
  int64_t gdn = H * linear_conv_dim() + H * linear_value_dim() + 2 * H * linear_num_value_heads +
                int64_t(linear_conv_dim()) * linear_conv_kernel + 2 * linear_num_value_heads +
                linear_value_head_dim + int64_t(linear_value_dim()) * H;
  int64_t per_layer_common = 3 * H * I + 2 * H;
  int64_t total = vocab_size * H + H + (tie_word_embeddings ? 0 : vocab_size * H);
  total += num_full_attention_layers() * (attn + per_layer_common);
  total += num_linear_attention_layers() * (gdn + per_layer_common);
  return total;
}

int64_t ModelConfig::kv_bytes_per_token(DType kv_dtype) const {
  const int64_t scales = kv_dtype == DType::I8 ? int64_t(num_kv_heads) * sizeof(float) : 0;
  return int64_t(num_full_attention_layers()) * 2 * (int64_t(num_kv_heads) * head_dim * dtype_size(kv_dtype) + scales);
}

int64_t ModelConfig::state_bytes_per_sequence(int conv_bytes_per_element) const {
  int64_t recurrent = int64_t(linear_num_value_heads) * linear_key_head_dim * linear_value_head_dim * 4;
  int64_t conv = int64_t(linear_conv_dim()) * (linear_conv_kernel - 1) * conv_bytes_per_element;
  return num_linear_attention_layers() * (recurrent + conv);
}

void ModelConfig::validate() const {
  // Bounds far above any real model and low enough that the sizes computed from these (parameter counts,
  // bytes per token) cannot overflow int64.
  constexpr int64_t kMaxWidth = int64_t(1) << 20;  // vocabulary, hidden and intermediate sizes
  auto positive = [](int64_t v, const char* name, int64_t max = int64_t(1) << 12) {  // layers, heads, head dims
    if (v <= 0) fail("config: \"{}\" must be positive, got {}", name, v);
    if (v > max) fail("config: \"{}\" is {}, more than the {} dcuserve accepts", name, v, max);
  };
  positive(vocab_size, "vocab_size", kMaxWidth);
  positive(hidden_size, "hidden_size", kMaxWidth);
  positive(intermediate_size, "intermediate_size", kMaxWidth);
  positive(num_layers, "num_hidden_layers");
  if (int(layer_types.size()) != num_layers)
    fail("config: layer_types has {} entries but num_hidden_layers is {}", layer_types.size(), num_layers);
  if (num_full_attention_layers() > 0) {
    positive(num_heads, "num_attention_heads");
    positive(num_kv_heads, "num_key_value_heads");
    positive(head_dim, "head_dim");
    if (num_heads % num_kv_heads != 0)
      fail("config: num_attention_heads ({}) is not a multiple of num_key_value_heads ({})", num_heads,
           num_kv_heads);
    if (rotary_dim % 2 != 0 || rotary_dim > head_dim || rotary_dim <= 0)
      fail("config: rotary dimension {} (head_dim * partial_rotary_factor) must be even and in (0, head_dim]",
           rotary_dim);
  }
  if (mtp_num_hidden_layers < 0) fail("config: \"mtp_num_hidden_layers\" must not be negative, got {}", mtp_num_hidden_layers);
  if (mtp_num_hidden_layers > 0 && num_full_attention_layers() == 0)
    fail("config: an MTP block is a full-attention layer, but the model has no attention dimensions");
  if (num_linear_attention_layers() > 0) {
    positive(linear_num_key_heads, "linear_num_key_heads");
    positive(linear_num_value_heads, "linear_num_value_heads");
    positive(linear_key_head_dim, "linear_key_head_dim");
    positive(linear_value_head_dim, "linear_value_head_dim");
    positive(linear_conv_kernel, "linear_conv_kernel_dim");
    if (linear_num_value_heads % linear_num_key_heads != 0)
      fail("config: linear_num_value_heads ({}) is not a multiple of linear_num_key_heads ({})",
           linear_num_value_heads, linear_num_key_heads);
  }
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", source, e.what());
  }
  if (!root.is_object()) fail("{}: expected a JSON object", source);
  std::string top_type = optional_field<std::string>(root, "model_type", "", source);
  const json& tc = root.contains("text_config") && root["text_config"].is_object() ? root["text_config"] : root;
  ModelConfig c;
  c.model_type = optional_field<std::string>(tc, "model_type", top_type, source);
  if (c.model_type != "qwen3_5_text" && c.model_type != "qwen3_5" && c.model_type != "qwen3_next")
    fail("{}: unsupported model_type \"{}\" (supported: qwen3_5, qwen3_5_text)", source,
         c.model_type.empty() ? top_type : c.model_type);
  if (tc.contains("num_experts") && optional_field<int>(tc, "num_experts", 0, source) > 0)
    fail("{}: mixture-of-experts Qwen3.5 models are not supported yet", source);

  c.vocab_size = required<int64_t>(tc, "vocab_size", source);
  c.hidden_size = required<int64_t>(tc, "hidden_size", source);
  c.intermediate_size = required<int64_t>(tc, "intermediate_size", source);
  c.num_layers = required<int>(tc, "num_hidden_layers", source);
  constexpr int kMaxLayers = 4096;  // as ModelConfig::validate; checked before layer_types is built
  if (c.num_layers <= 0 || c.num_layers > kMaxLayers)
    fail("{}: num_hidden_layers must be in 1..{}, got {}", source, kMaxLayers, c.num_layers);
  c.rms_norm_eps = optional_field<float>(tc, "rms_norm_eps", 1e-6f, source);
  c.max_position_embeddings = optional_field<int64_t>(tc, "max_position_embeddings", 32768, source);
  c.tie_word_embeddings = optional_field<bool>(tc, "tie_word_embeddings",
                                               optional_field<bool>(root, "tie_word_embeddings", false, source), source);

  if (tc.contains("layer_types")) {
    for (const auto& t : tc["layer_types"]) {
      std::string s = t.is_string() ? t.get<std::string>() : "";
      if (s == "linear_attention") c.layer_types.push_back(LayerType::LinearAttention);
      else if (s == "full_attention") c.layer_types.push_back(LayerType::FullAttention);
      else fail("{}: unknown layer type {} in layer_types", source, t.dump());
    }
  } else {
    int interval = optional_field<int>(tc, "full_attention_interval", 4, source);
    if (interval <= 0) fail("{}: full_attention_interval must be positive", source);
    for (int i = 0; i < c.num_layers; ++i)
      c.layer_types.push_back((i + 1) % interval == 0 ? LayerType::FullAttention : LayerType::LinearAttention);
  }

  c.num_heads = required<int>(tc, "num_attention_heads", source);
  c.num_kv_heads = optional_field<int>(tc, "num_key_value_heads", c.num_heads, source);
  c.head_dim = optional_field<int>(tc, "head_dim", c.num_heads ? int(c.hidden_size / c.num_heads) : 0, source);
  c.attn_output_gate = optional_field<bool>(tc, "attn_output_gate", true, source);
  float partial = optional_field<float>(tc, "partial_rotary_factor", 1.0f, source);
  c.rope_theta = optional_field<float>(tc, "rope_theta", 10000.f, source);
  if (tc.contains("rope_parameters") && tc["rope_parameters"].is_object()) {
    const json& rp = tc["rope_parameters"];
    c.rope_theta = optional_field<float>(rp, "rope_theta", c.rope_theta, source);
    partial = optional_field<float>(rp, "partial_rotary_factor", partial, source);
    std::string rope_type = optional_field<std::string>(rp, "rope_type", "default", source);
    if (rope_type != "default") fail("{}: rope_type \"{}\" is not supported yet", source, rope_type);
  }
  if (!(partial > 0.0f && partial <= 1.0f)) fail("{}: partial_rotary_factor must be in (0, 1], got {}", source, partial);
  c.rotary_dim = int(c.head_dim * partial);

  c.linear_num_key_heads = optional_field<int>(tc, "linear_num_key_heads", 0, source);
  c.linear_num_value_heads = optional_field<int>(tc, "linear_num_value_heads", 0, source);
  c.linear_key_head_dim = optional_field<int>(tc, "linear_key_head_dim", 0, source);
  c.linear_value_head_dim = optional_field<int>(tc, "linear_value_head_dim", 0, source);
  c.linear_conv_kernel = optional_field<int>(tc, "linear_conv_kernel_dim", 0, source);
  c.mtp_num_hidden_layers = optional_field<int>(tc, "mtp_num_hidden_layers", 0, source);
  c.validate();
  return c;
}

ModelConfig load_model_config(const std::string& model_dir) {
  std::string path = (std::filesystem::path(model_dir) / "config.json").string();
  if (!std::filesystem::exists(path)) fail("{}: no config.json in the model folder", model_dir);
  return parse_model_config(read_text_file(path), path);
}

GenerationDefaults parse_generation_defaults(const std::string& generation_config_text, const std::string& config_text,
                                             const std::string& model_dir) {
  auto parse = [&](const std::string& text, const char* file) -> json {
    const std::string source = (std::filesystem::path(model_dir) / file).string();
    if (text.empty()) return json::object();
    try {
      json j = json::parse(text);
      if (!j.is_object()) fail("{}: expected a JSON object", source);
      return j;
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", source, e.what());
    }
  };
  const json gen = parse(generation_config_text, "generation_config.json");
  const json cfg = parse(config_text, "config.json");
  GenerationDefaults d;
  if (gen.contains("eos_token_id")) d.eos_token_ids = id_list(gen["eos_token_id"]);
  if (d.eos_token_ids.empty() && cfg.contains("eos_token_id")) d.eos_token_ids = id_list(cfg["eos_token_id"]);
  if (d.eos_token_ids.empty() && cfg.contains("text_config") && cfg["text_config"].is_object() &&
      cfg["text_config"].contains("eos_token_id"))
    d.eos_token_ids = id_list(cfg["text_config"]["eos_token_id"]);
  auto num = [&](const char* key) -> std::optional<double> {
    if (gen.contains(key) && gen[key].is_number()) return gen[key].get<double>();
    return std::nullopt;
  };
  // Values out of a type's range are ignored, as missing ones are (the cast itself would be undefined).
  auto integer = [&](const char* key) -> std::optional<int32_t> {
    const auto v = num(key);
    if (!v || !(*v >= std::numeric_limits<int32_t>::min() && *v <= std::numeric_limits<int32_t>::max()))
      return std::nullopt;
    return int32_t(*v);
  };
  auto real = [&](const char* key) -> std::optional<float> {
    const auto v = num(key);
    if (!v || !(std::fabs(*v) <= std::numeric_limits<float>::max())) return std::nullopt;
    return float(*v);
  };
  d.bos_token_id = integer("bos_token_id");
  d.pad_token_id = integer("pad_token_id");
  d.temperature = real("temperature");
  d.top_p = real("top_p");
  d.top_k = integer("top_k");
  d.min_p = real("min_p");
  d.repetition_penalty = real("repetition_penalty");
  d.presence_penalty = real("presence_penalty");
  d.max_new_tokens = integer("max_new_tokens");
  if (gen.contains("do_sample") && gen["do_sample"].is_boolean()) d.do_sample = gen["do_sample"].get<bool>();
  return d;
}

GenerationDefaults load_generation_defaults(const std::string& model_dir) {
  namespace fs = std::filesystem;
  auto read_if_there = [&](const char* file) {
    const fs::path p = fs::path(model_dir) / file;
    return fs::exists(p) ? read_text_file(p.string()) : std::string();
  };
  return parse_generation_defaults(read_if_there("generation_config.json"), read_if_there("config.json"), model_dir);
}

}  // namespace dcu
