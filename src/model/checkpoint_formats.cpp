#include "model/checkpoint_formats.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "model/format_decoding.h"

namespace dcu {
namespace {

// The tensors a module stored in `q` has besides its own (required) and may have (optional). Static
// activation scales are claimed and not read: activations stay f16/bf16.
struct ClaimedTensors {
  std::vector<std::string_view> required, optional;
};

ClaimedTensors claimed_tensors(const ModuleQuant& q) {
  switch (q.format) {
    case StoredFormat::Dense: return {};
    case StoredFormat::Gptq: return {{"qweight", "qzeros", "scales"}, {"g_idx"}};
    case StoredFormat::AwqGemm: return {{"qweight", "qzeros", "scales"}, {}};
    case StoredFormat::CtPackQuantized:
    case StoredFormat::CtIntQuantized: {
      const std::string_view codes = q.format == StoredFormat::CtPackQuantized ? "weight_packed" : "weight";
      ClaimedTensors c{{codes, "weight_scale"}, {"weight_g_idx", "input_scale", "input_zero_point"}};
      if (q.format == StoredFormat::CtPackQuantized) c.required.push_back("weight_shape");
      (q.sym ? c.optional : c.required).push_back("weight_zero_point");
      return c;
    }
    case StoredFormat::Fp8Block: return {{"weight", "weight_scale_inv"}, {"input_scale"}};
  }
  return {};
}

// A tensor that only a quantized weight has: codes, group indices, the packed shape, and any scale or
// zero point (k_scale, weight_scale_2, ... included, so that no kind of scale is dropped unnoticed).
bool is_quantization_tensor(std::string_view suffix) {
  for (std::string_view s : {"qweight", "g_idx", "weight_packed", "weight_shape"})
    if (suffix == s) return true;
  return suffix.find("scale") != std::string_view::npos || suffix.find("zero") != std::string_view::npos;
}

std::string listing(const std::vector<std::string>& items) {
  constexpr size_t kShown = 8;
  std::string out = fmt::format("{}", fmt::join(items.begin(), items.begin() + std::min(items.size(), kShown), ", "));
  if (items.size() > kShown) out += fmt::format(" and {} more", items.size() - kShown);
  return out;
}

}  // namespace

HostLinear decode_quantized_linear(const Checkpoint& ckpt, const std::string& module, const ModuleQuant& quant,
                                   int64_t N, int64_t K) {
  const ModuleTensors m{ckpt, module, quant, N, K};
  switch (quant.format) {
    case StoredFormat::Gptq: return decode_gptq(m);
    case StoredFormat::AwqGemm: return decode_awq(m);
    case StoredFormat::CtPackQuantized: return decode_ct_packed(m);
    case StoredFormat::CtIntQuantized: return decode_ct_int(m);
    case StoredFormat::Fp8Block: return decode_fp8_block(m);
    case StoredFormat::Dense: break;
  }
  fail("internal: decode_quantized_linear called for module {}, which is stored dense", module);
}

std::vector<int32_t> quantized_input_order(const Checkpoint& ckpt, const std::string& module, const ModuleQuant& quant,
                                           int64_t N, int64_t K) {
  const ModuleTensors m{ckpt, module, quant, N, K};
  const bool compressed = quant.format == StoredFormat::CtPackQuantized || quant.format == StoredFormat::CtIntQuantized;
  const StoredTensor* g_idx = quant.format == StoredFormat::Gptq ? m.find("g_idx")
                              : compressed                        ? m.find("weight_g_idx")
                                                                  : nullptr;
  if (!g_idx) return {};
  m.expect(*g_idx, {"I32"}, {K});
  return group_layout(m, m.group(), g_idx).k_order;
}

void check_quantization_tensors(const Checkpoint& ckpt, const QuantizationConfig& config,
                                const std::set<std::string>& consumed_modules,
                                const std::vector<std::string>& unread_prefixes) {
  std::map<std::string, ModuleQuant> storage;
  std::vector<std::string> missing;
  for (const auto& module : consumed_modules) {
    const ModuleQuant q = config.module_storage(module);
    storage[module] = q;
    for (std::string_view suffix : claimed_tensors(q).required)
      if (!ckpt.find(module + "." + std::string(suffix)))
        missing.push_back(fmt::format("{}.{} (the module is {})", module, suffix, q.describe()));
  }
  if (!missing.empty())
    fail("the checkpoint lacks {} tensor(s) that the quantization_config says the model's quantized modules have: {}",
         missing.size(), listing(missing));

  std::vector<std::string> unclaimed;
  const std::string* file = nullptr;
  for (const auto& name : ckpt.names()) {
    if (std::any_of(unread_prefixes.begin(), unread_prefixes.end(),
                    [&](const std::string& p) { return name.compare(0, p.size(), p) == 0; }))
      continue;
    const size_t dot = name.rfind('.');
    const std::string_view suffix = std::string_view(name).substr(dot == std::string::npos ? 0 : dot + 1);
    if (!is_quantization_tensor(suffix)) continue;
    bool claimed = false;
    if (auto it = storage.find(name.substr(0, dot == std::string::npos ? 0 : dot)); it != storage.end()) {
      const ClaimedTensors c = claimed_tensors(it->second);
      claimed = std::find(c.required.begin(), c.required.end(), suffix) != c.required.end() ||
                std::find(c.optional.begin(), c.optional.end(), suffix) != c.optional.end();
    }
    if (claimed) continue;
    unclaimed.push_back(name);
    if (!file) file = ckpt.find(name)->file;
  }
  if (!unclaimed.empty())
    fail("{}: {} quantization tensor(s) belong to no quantized module the model reads: {}; the weights they scale "
         "would be read without them (the quantization_config does not describe this checkpoint's modules)",
         *file, unclaimed.size(), listing(unclaimed));
}

}  // namespace dcu
