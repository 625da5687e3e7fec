// The whole forward of a tiny Qwen3.5 (3 Gated DeltaNet layers and 1 attention layer, random weights):
// on a device against the CPU, and on the CPU alone fed two ways.

#include <cmath>
#include <memory>

#include "cache/cache_storage.h"
#include "doctor/self_test.h"
#include "doctor/twin_tensor.h"
#include "model/model_runner.h"
#include "model/weights.h"

namespace dcu::doctor {
namespace {

constexpr int kBlockSize = 16;
constexpr uint64_t kSeed = 7;

ModelConfig tiny_config() {
  ModelConfig c;
  c.model_type = "qwen3_5_text";
  c.vocab_size = 512;
  c.hidden_size = 128;
  c.intermediate_size = 256;
  c.num_layers = 4;
  c.layer_types = {LayerType::LinearAttention, LayerType::LinearAttention, LayerType::LinearAttention,
                   LayerType::FullAttention};
  c.max_position_embeddings = 4096;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.rotary_dim = 16;
  c.rope_theta = 1e7f;
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 4;
  c.linear_key_head_dim = 32;
  c.linear_value_head_dim = 32;
  c.linear_conv_kernel = 4;
  c.validate();
  return c;
}

// The tiny model on one backend with room for one sequence of up to 64 tokens, fed step by step.
class TinyModel {
 public:
  TinyModel(Backend& backend, WeightFormat format, DType kv_dtype) : config_(tiny_config()) {
    cache_ = std::make_unique<CacheStorage>(backend, config_, CacheShape{4, kBlockSize, 1, kv_dtype, 0});
    runner_ = std::make_unique<ModelRunner>(
        backend, config_, random_weights(config_, backend, DType::BF16, kSeed, shard_plan(config_, 0, 1), {}, format),
        *cache_, 64);
  }
  // Logits of every token in tokens[fed, fed + count), continuing the sequence.
  std::vector<float> feed(const std::vector<int32_t>& tokens, int count) {
    const SequenceStep step{std::span<const int32_t>(tokens).subspan(size_t(fed_), size_t(count)), fed_, blocks_, 0,
                            true};
    fed_ += count;
    return runner_->step_to_host(std::span<const SequenceStep>(&step, 1));
  }

 private:
  ModelConfig config_;
  std::unique_ptr<CacheStorage> cache_;
  std::unique_ptr<ModelRunner> runner_;
  std::vector<int32_t> blocks_ = {0, 1, 2, 3};
  int fed_ = 0;
};

// 24 tokens: a prompt of 21 then 3 decode tokens.
std::vector<int32_t> tokens() {
  std::vector<int32_t> t;
  for (int i = 0; i < 24; ++i) t.push_back(int32_t((i * 131 + 17) % 512));
  return t;
}
// The steps the sequence is fed in: a prompt of 16 + 5 tokens (a chunked prefill), then decode steps.
const std::vector<int> kSteps = {16, 5, 1, 1, 1};

bool finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

std::vector<OpResult> compare_model(Backend& reference, Backend& device, double tolerance) {
  const OneOpenMpThread serial;
  std::vector<OpResult> out;
  for (WeightFormat format : {WeightFormat::Dense, WeightFormat::Int4}) {
    OpResult r{fmt::format("tiny model, {} weights", format == WeightFormat::Dense ? "bf16" : "int4"), 0, tolerance,
               ""};
    try {
      TinyModel on_reference(reference, format, DType::F32);
      // The device keeps the server's KV type: 16-bit on GPUs.
      TinyModel on_device(device, format, device.kind() == DeviceKind::Cpu ? DType::F32 : DType::BF16);
      const std::vector<int32_t> t = tokens();
      for (int count : kSteps) {
        const std::vector<float> want = on_reference.feed(t, count), got = on_device.feed(t, count);
        r.error = std::max(r.error, finite(got) ? relative_error(got, want) : INFINITY);
      }
    } catch (const std::exception& e) {
      r.failure = e.what();
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<OpResult> cpu_smoke(Backend& cpu) {
  // Chunked vs one-shot prefill and the recurrent decode form differ only in summation order.
  const OneOpenMpThread serial;
  OpResult r{"tiny model: stepwise vs one-shot", 0, 1e-4, ""};
  try {
    const std::vector<int32_t> t = tokens();
    TinyModel stepwise(cpu, WeightFormat::Dense, DType::F32), at_once(cpu, WeightFormat::Dense, DType::F32);
    std::vector<float> stepped;
    for (int count : kSteps) {
      const std::vector<float> part = stepwise.feed(t, count);
      stepped.insert(stepped.end(), part.begin(), part.end());
    }
    const std::vector<float> whole = at_once.feed(t, int(t.size()));
    r.error = finite(stepped) && finite(whole) ? relative_error(stepped, whole) : INFINITY;
  } catch (const std::exception& e) {
    r.failure = e.what();
  }
  return {r};
}

}  // namespace dcu::doctor
