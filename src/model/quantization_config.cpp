#include "model/quantization_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu {
namespace {

// Ordered: GPTQ `dynamic` rules apply in the order written (the first match wins).
using json = nlohmann::ordered_json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Python's re.match: the match starts at the first character and may end anywhere.
bool re_match(const std::regex& re, std::string_view name) {
  return std::regex_search(name.begin(), name.end(), re, std::regex_constants::match_continuous);
}

std::regex compile(const std::string& pattern, const std::string& what, const std::string& source) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("{}: {} \"{}\" is not a regular expression dcuserve can read ({})", source, what, pattern, e.what());
  }
}

// A field of the quantization_config object: `fallback` when absent or null. (Keys are std::string:
// nlohmann-json 3.10, Ubuntu 22.04's, looks up no std::string_view.)
template <typename T>
T field(const json& j, const std::string& key, T fallback, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->template get<T>();
  } catch (const json::exception&) {
    fail("{}: quantization_config field \"{}\" has the wrong type ({})", source, key, it->type_name());
  }
}

// The first of `keys` present (vLLM's get_from_keys); an error naming them when none is.
template <typename T>
T required(const json& j, std::initializer_list<std::string_view> keys, const std::string& source) {
  for (std::string_view k : keys) {
    const std::string key(k);
    if (j.contains(key) && !j.at(key).is_null()) return field<T>(j, key, T{}, source);
  }
  fail("{}: quantization_config has no \"{}\"", source, fmt::join(keys, "\" or \""));
}

std::vector<std::string> string_list(const json& j, const std::string& key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array()) fail("{}: quantization_config field \"{}\" must be a list", source, key);
  std::vector<std::string> out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
    else if (v.is_array())  // GPTQModel writes modules_in_block_to_quantize as a list of lists
      for (const auto& inner : v) out.push_back(inner.get<std::string>());
    else fail("{}: quantization_config field \"{}\" must hold strings", source, key);
  }
  return out;
}

int group_size_of(const json& j, std::initializer_list<std::string_view> keys, const std::string& method,
                  const std::string& source) {
  const int g = required<int>(j, keys, source);
  if (g != -1 && g <= 0) fail("{}: {} group_size {} must be positive, or -1 for one group per row", source, method, g);
  return g;
}

void check_gptq_bits(int bits, const std::string& where, const std::string& source) {
  if (bits != 4 && bits != 8)
    fail("{}: GPTQ {}bits {} is not supported (dcuserve reads 4- and 8-bit GPTQ)", source, where, bits);
}

// vLLM gptq.py GPTQConfig.from_config and gptq_utils.py get_dynamic_override.
void parse_gptq(const json& q, QuantizationConfig& c, const std::string& source) {
  c.bits = required<int>(q, {"bits"}, source);
  check_gptq_bits(c.bits, "", source);
  c.group_size = group_size_of(q, {"group_size"}, "GPTQ", source);
  c.sym = field<bool>(q, "sym", true, source);
  c.desc_act = field<bool>(q, "desc_act", false, source);
  c.gptq.lm_head = field<bool>(q, "lm_head", false, source);
  c.gptq.checkpoint_format = field<std::string>(q, "checkpoint_format", "", source);
  const std::string& f = c.gptq.checkpoint_format;
  if (!f.empty() && f != "gptq" && f != "gptq_v2")
    fail("{}: GPTQ checkpoint_format \"{}\" is not supported (supported: gptq, gptq_v2)", source, f);
  if (field<bool>(q, "is_marlin_format", false, source))
    fail("{}: GPTQ is_marlin_format checkpoints are not supported (supported: gptq, gptq_v2)", source);
  const std::string pack_dtype = field<std::string>(q, "pack_dtype", "int32", source);
  if (pack_dtype != "int32")
    fail("{}: GPTQ pack_dtype \"{}\" is not supported (dcuserve reads int32 packing)", source, pack_dtype);
  c.gptq.modules_in_block_to_quantize = string_list(q, "modules_in_block_to_quantize", source);
  auto dyn = q.find("dynamic");
  if (dyn == q.end() || dyn->is_null()) return;
  if (!dyn->is_object()) fail("{}: GPTQ \"dynamic\" must be an object of regex keys", source);
  for (const auto& [key, overrides] : dyn->items()) {
    if (!overrides.is_object()) fail("{}: GPTQ dynamic entry \"{}\" must be an object", source, key);
    GptqDynamicRule rule;
    rule.key = key;
    rule.exclude = starts_with(key, "-:");
    const std::string pattern = rule.exclude || starts_with(key, "+:") ? key.substr(2) : key;
    rule.regex = compile(pattern, "GPTQ dynamic key", source);
    if (overrides.contains("bits")) {
      rule.bits = field<int>(overrides, "bits", 0, source);
      check_gptq_bits(*rule.bits, fmt::format("dynamic \"{}\" ", key), source);
    }
    if (overrides.contains("group_size"))
      rule.group_size = group_size_of(overrides, {"group_size"}, "GPTQ dynamic \"" + key + "\"", source);
    if (overrides.contains("sym")) rule.sym = field<bool>(overrides, "sym", true, source);
    c.gptq.dynamic.push_back(std::move(rule));
  }
}

// vLLM awq.py AWQConfig.from_config.
void parse_awq(const json& q, QuantizationConfig& c, const std::string& source) {
  c.bits = required<int>(q, {"w_bit", "bits"}, source);
  if (c.bits != 4) fail("{}: AWQ bits {} is not supported (dcuserve reads 4-bit AWQ)", source, c.bits);
  c.group_size = group_size_of(q, {"q_group_size", "group_size"}, "AWQ", source);
  c.awq.zero_point = field<bool>(q, "zero_point", true, source);
  c.sym = !c.awq.zero_point;
  c.awq.version = lower(field<std::string>(q, "version", "gemm", source));
  if (c.awq.version != "gemm")
    fail("{}: AWQ version \"{}\" is not supported (dcuserve reads the GEMM layout, version \"gemm\")", source,
         c.awq.version);
  c.awq.modules_to_not_convert = string_list(q, "modules_to_not_convert", source);
}

std::vector<NamePattern> patterns(const std::vector<std::string>& texts, const std::string& what,
                                  const std::string& source) {
  std::vector<NamePattern> out;
  for (const auto& t : texts) {
    NamePattern p{t, std::nullopt};
    if (starts_with(t, "re:")) p.regex = compile(t.substr(3), what, source);
    out.push_back(std::move(p));
  }
  return out;
}

// The weight QuantizationArgs of a compressed-tensors config group (vLLM compressed_tensors.py
// _quantization_scheme_map_from_config).
CtScheme parse_ct_group(const std::string& name, const json& g, const std::string& top_format,
                        const std::string& source) {
  const std::string where = "compressed-tensors config group \"" + name + "\"";
  if (!g.is_object()) fail("{}: {} must be an object", source, where);
  CtScheme s;
  s.targets = patterns(string_list(g, "targets", source), where + " target", source);
  if (s.targets.empty()) fail("{}: {} has no targets", source, where);
  s.format = field<std::string>(g, "format", top_format, source);
  if (s.format != "pack-quantized" && s.format != "int-quantized" && s.format != "naive-quantized")
    fail("{}: {} has format \"{}\" (supported: pack-quantized, int-quantized, naive-quantized)", source, where,
         s.format);
  auto w = g.find("weights");
  if (w == g.end() || !w->is_object()) fail("{}: {} quantizes no weights", source, where);
  const std::string type = field<std::string>(*w, "type", "int", source);
  if (type != "int") fail("{}: {} has weights of type \"{}\" (supported: int)", source, where, type);
  s.bits = field<int>(*w, "num_bits", 0, source);
  const bool packed = s.format == "pack-quantized";
  if (packed ? (s.bits != 4 && s.bits != 8) : s.bits != 8)
    fail("{}: {} has {}-bit {} weights (supported: {})", source, where, s.bits, s.format, packed ? "4, 8" : "8");
  s.sym = field<bool>(*w, "symmetric", true, source);
  if (field<bool>(*w, "dynamic", false, source)) fail("{}: {} has dynamic weight quantization", source, where);
  const std::string strategy = field<std::string>(*w, "strategy", "", source);
  if (strategy == "group") {
    s.group_size = field<int>(*w, "group_size", 0, source);
    if (s.group_size <= 0) fail("{}: {} has strategy \"group\" without a positive group_size", source, where);
  } else if (strategy != "channel") {
    fail("{}: {} has weight strategy \"{}\" (supported: group, channel)", source, where, strategy);
  }
  auto a = g.find("input_activations");
  if (a != g.end() && a->is_object()) {
    s.input_activations = {true, field<int>(*a, "num_bits", 0, source), field<std::string>(*a, "type", "", source),
                           field<std::string>(*a, "strategy", "", source), field<bool>(*a, "symmetric", true, source),
                           field<bool>(*a, "dynamic", false, source)};
  }
  return s;
}

void parse_compressed_tensors(const json& q, QuantizationConfig& c, const std::string& source) {
  c.ct.format = field<std::string>(q, "format", "", source);
  auto groups = q.find("config_groups");
  if (groups == q.end() || !groups->is_object() || groups->empty())
    fail("{}: compressed-tensors quantization_config has no config_groups", source);
  for (const auto& [name, g] : groups->items()) c.ct.schemes.push_back(parse_ct_group(name, g, c.ct.format, source));
  c.ct.ignore = patterns(string_list(q, "ignore", source), "compressed-tensors ignore entry", source);
  // KV-cache scales and online rotations change what the checkpoint's numbers mean; refuse, not ignore.
  if (q.contains("kv_cache_scheme") && !q.at("kv_cache_scheme").is_null())
    fail("{}: compressed-tensors kv_cache_scheme is not supported (dcuserve keeps the KV cache in f16/bf16)", source);
  if (q.contains("transform_config") && !q.at("transform_config").is_null())
    fail("{}: compressed-tensors transform_config (online rotations) is not supported", source);
  auto sparsity = q.find("sparsity_config");
  if (sparsity != q.end() && sparsity->is_object() && !sparsity->empty()) {
    const std::string f = field<std::string>(*sparsity, "format", "dense", source);
    if (f != "dense") fail("{}: compressed-tensors sparsity format \"{}\" is not supported (supported: dense)", source, f);
  }
}

// vLLM fp8.py Fp8Config.from_config.
void parse_fp8(const json& q, QuantizationConfig& c, const std::string& source) {
  const std::string fmt_name = field<std::string>(q, "fmt", "e4m3", source);
  if (fmt_name != "e4m3") fail("{}: FP8 fmt \"{}\" is not supported (supported: e4m3)", source, fmt_name);
  c.fp8.activation_scheme = field<std::string>(q, "activation_scheme", "dynamic", source);
  if (c.fp8.activation_scheme != "dynamic" && c.fp8.activation_scheme != "static")
    fail("{}: FP8 activation_scheme \"{}\" is not supported (supported: dynamic, static)", source,
         c.fp8.activation_scheme);
  const auto block = field<std::vector<int>>(q, "weight_block_size", {}, source);
  if (block != std::vector<int>{128, 128})
    fail("{}: FP8 weight_block_size {} is not supported (dcuserve reads block-wise FP8 with [128, 128])", source,
         block.empty() ? std::string("absent (one scale per tensor)") : fmt::format("[{}]", fmt::join(block, ", ")));
  c.bits = 8;
  c.group_size = 128;
  c.fp8.modules_to_not_convert = string_list(q, "ignored_layers", source);
  if (c.fp8.modules_to_not_convert.empty()) c.fp8.modules_to_not_convert = string_list(q, "modules_to_not_convert", source);
}

const json* find_quantization_object(const json& root, const std::string& source) {
  std::vector<const json*> scopes{&root};
  if (root.contains("text_config") && root.at("text_config").is_object()) scopes.push_back(&root.at("text_config"));
  for (const json* scope : scopes)
    for (const char* key : {"quantization_config", "compression_config"}) {
      auto it = scope->find(key);
      if (it == scope->end() || it->is_null()) continue;
      if (!it->is_object()) fail("{}: \"{}\" must be an object", source, key);
      return &*it;
    }
  return nullptr;
}

bool is_lm_head(std::string_view name) {
  return name == "lm_head" || (name.size() > 8 && name.substr(name.size() - 8) == ".lm_head");
}

bool contains_any(std::string_view name, const std::vector<std::string>& needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const std::string& s) { return name.find(s) != std::string_view::npos; });
}

// `entry` (trailing dots dropped) is a run of whole dotted components of `name`: "mlp.gate" matches
// "layers.0.mlp.gate" but not "layers.0.mlp.gate_proj" (sglang#23467 / #26287; vLLM's exact match
// misses the short entries Qwen's FP8 configs use, vllm#44628).
bool dotted_match(std::string_view name, std::string entry) {
  while (!entry.empty() && entry.back() == '.') entry.pop_back();
  if (entry.empty()) return false;
  for (size_t at = name.find(entry); at != std::string_view::npos; at = name.find(entry, at + 1)) {
    const size_t end = at + entry.size();
    if ((at == 0 || name[at - 1] == '.') && (end == name.size() || name[end] == '.')) return true;
  }
  return false;
}

// vLLM compressed_tensors/utils.py find_matched_target: the first target equal to (or, for "re:", a
// re.match of) the name; else the first naming the module class, Linear, case-insensitively.
const CtScheme* ct_scheme_for(const CompressedTensorsConfig& ct, std::string_view name) {
  // target_scheme_map: targets in first-seen order, a later group repeating a target takes it over.
  std::vector<std::pair<const NamePattern*, const CtScheme*>> targets;
  for (const auto& s : ct.schemes)
    for (const auto& t : s.targets) {
      auto it = std::find_if(targets.begin(), targets.end(), [&](const auto& e) { return e.first->text == t.text; });
      if (it == targets.end()) targets.emplace_back(&t, &s);
      else it->second = &s;
    }
  for (const auto& [t, s] : targets)
    if (t->matches(name)) return s;
  for (const auto& [t, s] : targets)
    if (t->regex ? re_match(*t->regex, "Linear") : std::string("linear").find(lower(t->text)) != std::string::npos)
      return s;
  return nullptr;
}

}  // namespace

std::string_view quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::None: return "none";
    case QuantMethod::CompressedTensors: return "compressed-tensors";
    case QuantMethod::Gptq: return "gptq";
    case QuantMethod::Awq: return "awq";
    case QuantMethod::Fp8: return "fp8";
  }
  return "?";
}

std::string_view stored_format_name(StoredFormat f) {
  switch (f) {
    case StoredFormat::Dense: return "dense";
    case StoredFormat::Gptq: return "GPTQ";
    case StoredFormat::AwqGemm: return "AWQ";
    case StoredFormat::CtPackQuantized: return "compressed-tensors pack-quantized";
    case StoredFormat::CtIntQuantized: return "compressed-tensors int-quantized";
    case StoredFormat::Fp8Block: return "FP8 block";
  }
  return "?";
}

std::string ModuleQuant::describe() const {
  if (!quantized()) return "dense";
  const std::string group = group_size == -1 ? "one group per row" : fmt::format("group {}", group_size);
  return fmt::format("{} {}-bit, {}, {}", stored_format_name(format), bits, group, sym ? "symmetric" : "asymmetric");
}

bool NamePattern::matches(std::string_view name) const { return regex ? re_match(*regex, name) : text == name; }

ModuleQuant QuantizationConfig::module_storage(std::string_view name) const {
  switch (method) {
    case QuantMethod::None: return {};
    case QuantMethod::Gptq: {
      // vLLM gptq_utils.py get_linear_quant_method: lm_head only with "lm_head": true, then
      // modules_in_block_to_quantize (substrings), then the first `dynamic` rule that matches.
      if (is_lm_head(name) && !gptq.lm_head) return {};
      const auto& only = gptq.modules_in_block_to_quantize;
      if (!only.empty() && !contains_any(name, only)) return {};
      ModuleQuant m{StoredFormat::Gptq, bits, group_size, sym, gptq.checkpoint_format != "gptq_v2"};
      for (const auto& rule : gptq.dynamic) {
        if (!re_match(rule.regex, name)) continue;
        if (rule.exclude) return {};
        m.bits = rule.bits.value_or(m.bits);
        m.group_size = rule.group_size.value_or(m.group_size);
        m.sym = rule.sym.value_or(m.sym);
        break;
      }
      return m;
    }
    case QuantMethod::Awq:
      // vLLM awq.py is_layer_skipped_awq: a substring match. lm_head is never an AWQ layer.
      if (is_lm_head(name) || contains_any(name, awq.modules_to_not_convert)) return {};
      return {StoredFormat::AwqGemm, bits, group_size, sym, false};
    case QuantMethod::CompressedTensors: {
      // vLLM compressed_tensors/utils.py should_ignore_layer, then the matched target's scheme (vLLM
      // refuses a module no target matches; here it is dense, and its tensors say whether that holds).
      for (const auto& p : ct.ignore)
        if (p.matches(name)) return {};
      const CtScheme* s = ct_scheme_for(ct, name);
      if (!s) return {};
      const StoredFormat f = s->format == "pack-quantized" ? StoredFormat::CtPackQuantized : StoredFormat::CtIntQuantized;
      return {f, s->bits, s->group_size, s->sym, false};
    }
    case QuantMethod::Fp8: {
      if (is_lm_head(name)) return {};
      for (const auto& entry : fp8.modules_to_not_convert)
        if (dotted_match(name, entry)) return {};
      return {StoredFormat::Fp8Block, 8, 128, true, false};
    }
  }
  return {};
}

QuantizationConfig parse_quantization_config(const std::string& config_json, const std::string& source) {
  json root;
  try {
    root = json::parse(config_json);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", source, e.what());
  }
  QuantizationConfig c;
  const json* q = root.is_object() ? find_quantization_object(root, source) : nullptr;
  if (!q) return c;
  const std::string method = lower(field<std::string>(*q, "quant_method", "", source));
  if (method.empty()) fail("{}: quantization_config has no \"quant_method\"", source);
  if (method == "gptq") {
    c.method = QuantMethod::Gptq;
    parse_gptq(*q, c, source);
  } else if (method == "awq") {
    c.method = QuantMethod::Awq;
    parse_awq(*q, c, source);
  } else if (method == "compressed-tensors" || method == "compressed_tensors") {
    c.method = QuantMethod::CompressedTensors;
    parse_compressed_tensors(*q, c, source);
  } else if (method == "fp8") {
    c.method = QuantMethod::Fp8;
    parse_fp8(*q, c, source);
  } else {
    fail("{}: quant_method \"{}\" is not supported (supported: gptq, awq, compressed-tensors, fp8)", source, method);
  }
  return c;
}

QuantizationConfig load_quantization_config(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "config.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_quantization_config(ss.str(), path);
}

}  // namespace dcu
