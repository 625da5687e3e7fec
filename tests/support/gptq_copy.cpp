#include "support/gptq_copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/dtype.h"
#include "core/error.h"
#include "model/safetensors.h"

namespace dcu::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

json read_json(const fs::path& path) { return json::parse(std::ifstream(path)); }

void write_folder(const fs::path& src, const fs::path& dir, const std::map<std::string, RawTensor>& tensors,
                  const json& config) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  if (fs::exists(src / "generation_config.json"))
    fs::copy_file(src / "generation_config.json", dir / "generation_config.json", fs::copy_options::overwrite_existing);
  write_safetensors(dir / "model.safetensors", tensors);
}

}  // namespace

void write_safetensors(const fs::path& path, const std::map<std::string, RawTensor>& tensors) {
  json header = json::object();
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const uint64_t n = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << text;
  for (const auto& [name, t] : tensors) out << t.bytes;
}

json write_gptq_copy(const fs::path& src, const fs::path& dst, const fs::path& dequantized,
                     const GptqCopyOptions& options) {
  const Checkpoint ckpt = Checkpoint::open(src.string());
  std::map<std::string, RawTensor> packed, dense;
  for (const std::string& name : ckpt.names()) {
    const StoredTensor& t = *ckpt.find(name);
    const RawTensor raw{t.dtype_name, t.shape, std::string(static_cast<const char*>(t.data), t.bytes)};
    const std::string module = name.substr(0, name.size() - std::string(".weight").size());
    const bool quantized = module.find(".mlp.") != std::string::npos ||
                           (options.attention && module.find(".self_attn.") != std::string::npos);
    if (!ends_with(name, ".weight") || t.shape.size() != 2 || !quantized) {
      packed[name] = dense[name] = raw;
      continue;
    }
    const int64_t N = t.shape[0], K = t.shape[1], G = options.group, groups = K / G;
    DCU_CHECK(K % G == 0 && K % 8 == 0 && N % 8 == 0);
    std::vector<int32_t> g_idx(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) g_idx[size_t(k)] = int32_t(options.act_order ? k % groups : k / G);
    // GPTQ's symmetric 4-bit grid (GPTQModel quantizer.py find_params): scale 2 max|w| / 15, zero 8.
    std::vector<uint16_t> scales(size_t(groups * N));  // F16 [groups, N]
    std::vector<uint8_t> q(size_t(N * K));
    std::vector<float> values(size_t(N * K));
    for (int64_t n = 0; n < N; ++n) {
      std::vector<float> amax(size_t(groups), 0.0f);
      for (int64_t k = 0; k < K; ++k)
        amax[size_t(g_idx[size_t(k)])] = std::max(amax[size_t(g_idx[size_t(k)])], std::fabs(load_as_f32(t.data, *t.dtype, size_t(n * K + k))));
      for (int64_t g = 0; g < groups; ++g)
        scales[size_t(g * N + n)] = f32_to_f16(amax[size_t(g)] > 0 ? 2.0f * amax[size_t(g)] / 15.0f : 1.0f);
      for (int64_t k = 0; k < K; ++k) {
        const float s = f16_to_f32(scales[size_t(g_idx[size_t(k)] * N + n)]);
        const float w = load_as_f32(t.data, *t.dtype, size_t(n * K + k));
        const float code = std::clamp(std::nearbyint(w / s) + 8.0f, 0.0f, 15.0f);
        q[size_t(n * K + k)] = uint8_t(code);
        values[size_t(n * K + k)] = s * (code - 8.0f);
      }
    }
    // qweight [K / 8, N]: word r of column n holds k = 8 r + i at bits 4i; qzeros [groups, N / 8]: the zero
    // 8 stored as 7 in every nibble (checkpoint_format "gptq").
    std::vector<uint32_t> qweight(size_t(K / 8 * N)), qzeros(size_t(groups * N / 8), 0x77777777u);
    for (int64_t r = 0; r < K / 8; ++r)
      for (int64_t n = 0; n < N; ++n)
        for (int i = 0; i < 8; ++i) qweight[size_t(r * N + n)] |= uint32_t(q[size_t(n * K + r * 8 + i)]) << (4 * i);
    packed[module + ".qweight"] = {"I32", {K / 8, N}, bytes_of(qweight)};
    packed[module + ".qzeros"] = {"I32", {groups, N / 8}, bytes_of(qzeros)};
    packed[module + ".scales"] = {"F16", {groups, N}, bytes_of(scales)};
    packed[module + ".g_idx"] = {"I32", {K}, bytes_of(g_idx)};
    dense[name] = {"F32", {N, K}, bytes_of(values)};
  }
  const json source_config = read_json(src / "config.json");
  const json quantization = {{"quant_method", "gptq"},    {"bits", 4},
                             {"group_size", options.group}, {"sym", true},
                             {"desc_act", options.act_order}, {"checkpoint_format", "gptq"},
                             {"lm_head", false},           {"pack_dtype", "int32"},
                             {"dynamic", {{options.attention ? "-:.*linear_attn.*" : "-:.*attn.*", json::object()}}}};
  json config = source_config;
  config["quantization_config"] = quantization;
  write_folder(src, dst, packed, config);
  if (!dequantized.empty()) write_folder(src, dequantized, dense, source_config);
  return quantization;
}

}  // namespace dcu::testing
