#include "model/config.h"

#include <filesystem>
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

template <typename T>
T required(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) fail("{}: missing required field \"{}\"", source, key);
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail("{}: field \"{}\" has the wrong type ({})", source, key, it->type_name());
  }
}

template <typename T>
T optional_field(const json& j, const char* key, T fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail("{}: field \"{}\" has the wrong type ({})", source, key, it->type_name());
  }
}

std::vector<int32_t> id_list(const json& j) {
  if (j.is_number_integer()) return {j.get<int32_t>()};
  std::vector<int32_t> ids;
  if (j.is_array())
    for (const auto& v : j)
      if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
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
  auto positive = [](int64_t v, const char* name) {
    if (v <= 0) fail("config: \"{}\" must be positive, got {}", name, v);
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
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

GenerationDefaults load_generation_defaults(const std::string& model_dir) {
  GenerationDefaults d;
  namespace fs = std::filesystem;
  auto read_json = [](const fs::path& p) -> json {
    if (!fs::exists(p)) return json::object();
    try {
      return json::parse(read_text_file(p.string()));
    } catch (const json::exception& e) {
      fail("{}: not valid JSON ({})", p.string(), e.what());
    }
  };
  json gen = read_json(fs::path(model_dir) / "generation_config.json");
  json cfg = read_json(fs::path(model_dir) / "config.json");
  if (gen.contains("eos_token_id")) d.eos_token_ids = id_list(gen["eos_token_id"]);
  if (d.eos_token_ids.empty() && cfg.contains("eos_token_id")) d.eos_token_ids = id_list(cfg["eos_token_id"]);
  if (d.eos_token_ids.empty() && cfg.contains("text_config") && cfg["text_config"].contains("eos_token_id"))
    d.eos_token_ids = id_list(cfg["text_config"]["eos_token_id"]);
  auto num = [&](const char* key) -> std::optional<double> {
    if (gen.contains(key) && gen[key].is_number()) return gen[key].get<double>();
    return std::nullopt;
  };
  if (auto v = num("bos_token_id")) d.bos_token_id = int32_t(*v);
  if (auto v = num("pad_token_id")) d.pad_token_id = int32_t(*v);
  if (auto v = num("temperature")) d.temperature = float(*v);
  if (auto v = num("top_p")) d.top_p = float(*v);
  if (auto v = num("top_k")) d.top_k = int(*v);
  if (auto v = num("min_p")) d.min_p = float(*v);
  if (auto v = num("repetition_penalty")) d.repetition_penalty = float(*v);
  if (auto v = num("presence_penalty")) d.presence_penalty = float(*v);
  if (auto v = num("max_new_tokens")) d.max_new_tokens = int(*v);
  if (gen.contains("do_sample") && gen["do_sample"].is_boolean()) d.do_sample = gen["do_sample"].get<bool>();
  return d;
}

}  // namespace dcu
