#include "model/quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/fp8_e4m3.h"

namespace dcu {

namespace {

// The checkpoint method a vLLM --quantization value names; None for values that name none.
QuantMethod method_named(const std::string& flag) {
  if (flag == "gptq" || flag == "gptq_marlin") return QuantMethod::Gptq;
  if (flag == "awq" || flag == "awq_marlin") return QuantMethod::Awq;
  if (flag == "compressed-tensors") return QuantMethod::CompressedTensors;
  if (flag == "fp8") return QuantMethod::Fp8;
  return QuantMethod::None;
}

}  // namespace

WeightFormat load_time_quantization(const std::string& flag, QuantMethod checkpoint) {
  if (flag == "none" || flag.empty()) return WeightFormat::Dense;
  if (flag == "int8") return WeightFormat::Int8;
  if (flag == "int4") return WeightFormat::Int4;
  const QuantMethod named = method_named(flag);
  if (named == QuantMethod::None)
    fail("--quantization {} is not supported; use none, int8, int4 or fp8 (quantize 16-bit matrices while loading, "
         "group {}), or the checkpoint's method: gptq, gptq_marlin, awq, awq_marlin, compressed-tensors, fp8",
         flag, kQuantGroup);
  if (checkpoint == QuantMethod::None) {
    if (named == QuantMethod::Fp8) return WeightFormat::Fp8;  // vLLM's dynamic FP8 of a 16-bit checkpoint
    fail("--quantization {}: the checkpoint is not quantized (its config.json has no quantization_config); use int8, "
         "int4 or fp8 to quantize it while loading",
         flag);
  }
  if (named != checkpoint)
    fail("--quantization {} does not match the checkpoint, whose quantization_config says quant_method \"{}\"; leave "
         "--quantization out (or none) to load it as shipped, or pass {}",
         flag, quant_method_name(checkpoint), quant_method_name(checkpoint));
  return WeightFormat::Dense;
}

WeightFormat stored_format(WeightFormat format, const Backend& backend) {
  return format == WeightFormat::Fp8 && !backend.reads_fp8_weights() ? WeightFormat::Int8 : format;
}

double weight_bytes(const ModelConfig& config, WeightFormat format) {
  const double table = double(config.vocab_size) * double(config.hidden_size);
  const double params = double(config.parameter_count());
  if (format == WeightFormat::Dense) return 2.0 * params;
  const double per_weight = (format == WeightFormat::Int4 ? 0.5 : 1.0) + 4.0 / double(kQuantGroup);
  // Every matrix but the embedding is quantized, lm_head included (a tied one as its own copy).
  const double matrices = params - table + (config.tie_word_embeddings ? table : 0.0);
  return 2.0 * table + per_weight * matrices;
}

HostLinear make_host_linear(WeightFormat format, int64_t N, int64_t K, std::string_view what) {
  DCU_CHECK(format != WeightFormat::Dense);
  HostLinear h;
  h.format = format;
  h.rows = N, h.cols = K;
  h.group = kQuantGroup;
  while (h.group > 32 && K % h.group != 0) h.group /= 2;  // 128, else 64 or 32
  if (K % 32 != 0 || K % h.group != 0)
    fail("{}: {} columns cannot be quantized to {} (K must be a multiple of 32)", what, K, weight_format_name(format));
  h.codes.resize(size_t(format == WeightFormat::Int4 ? N * K / 2 : N * K));
  h.scales.resize(size_t(N * (K / h.group)));
  return h;
}

void quantize_rows(const void* rows, DType dtype, int64_t row0, int64_t count, HostLinear& out) {
  const int64_t K = out.cols, G = out.group, groups = out.groups_per_row();
  const bool int4 = out.format == WeightFormat::Int4, fp8 = out.format == WeightFormat::Fp8;
  const float levels = fp8 ? 448.0f : int4 ? 7.0f : 127.0f;  // the largest magnitude a code holds
  const size_t row_bytes = size_t(K) * dtype_size(dtype);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < count; ++r) {
    thread_local std::vector<float> row;
    row.resize(size_t(K));
    const void* src = static_cast<const char*>(rows) + size_t(r) * row_bytes;
    for (int64_t k = 0; k < K; ++k) row[size_t(k)] = load_as_f32(src, dtype, size_t(k));
    const float* w = row.data();
    const int64_t n = row0 + r;
    uint8_t q4[kQuantGroup];
    for (int64_t g = 0; g < groups; ++g) {
      float absmax = 0.0f;
      for (int64_t k = g * G; k < (g + 1) * G; ++k) absmax = std::max(absmax, std::fabs(w[k]));
      const float scale = absmax > 0.0f ? absmax / levels : 1.0f;
      out.scales[size_t(n * groups + g)] = scale;
      for (int64_t k = g * G; k < (g + 1) * G; ++k) {
        if (fp8) {
          out.codes[size_t(n * K + k)] = fp8_e4m3_from_f32(w[k] / scale);
          continue;
        }
        const float q = std::clamp(std::nearbyint(w[k] / scale), -levels - 1.0f, levels);
        if (int4) q4[k - g * G] = uint8_t(int(q) + 8);
        else out.codes[size_t(n * K + k)] = uint8_t(int8_t(q));
      }
      if (int4) pack_int4_row(q4, G, out.codes.data() + n * (K / 2) + g * (G / 2));
    }
  }
}

bool keeps_16_bit(std::string_view tensor_name) {
  return tensor_name.find("in_proj_a.") != std::string_view::npos ||
         tensor_name.find("in_proj_b.") != std::string_view::npos;
}

Linear linear_view(const HostLinear& host) {
  const int64_t groups = host.groups_per_row();
  auto data = [](const auto& v) { return const_cast<void*>(static_cast<const void*>(v.data())); };
  Linear w;
  w.format = host.format;
  w.in_features = host.cols;
  w.group = host.group;
  const DType code_type = host.format == WeightFormat::Int8 ? DType::I8 : DType::U8;
  w.weight = Tensor(data(host.codes), code_type, {host.rows, host.format == WeightFormat::Int4 ? host.cols / 2 : host.cols});
  w.scales = Tensor(data(host.scales), DType::F32, {host.rows, groups});
  if (!host.zeros.empty()) w.zeros = Tensor(data(host.zeros), DType::U8, {host.rows, groups});
  if (!host.k_order.empty()) w.k_order = Tensor(data(host.k_order), DType::I32, {host.cols});
  check_linear(w, "quantized weight");
  return w;
}

Linear upload_linear(const HostLinear& host, Backend& backend, const std::function<void*(size_t)>& allocate) {
  Linear w = linear_view(host);
  for (Tensor* t : {&w.weight, &w.scales, &w.zeros, &w.k_order}) {
    if (t->empty()) continue;
    void* dst = allocate(t->bytes());
    backend.upload(dst, t->data, t->bytes());
    t->data = dst;
  }
  return w;
}

}  // namespace dcu
