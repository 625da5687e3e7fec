// The same weights in the other layouts Hugging Face produces load and give the reference logits:
// F32 and F16 tensors instead of BF16, `model.*` names (Qwen3_5ForCausalLM) instead of
// `model.language_model.*`, and extra `mtp.*` / `model.visual.*` tensors that are recognised and skipped.

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "model/sharding.h"
#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = "tests/data/tiny-qwen35";

// Rewrites the tiny checkpoint: BF16 tensors converted to `dtype` (F32, F16, or kept as BF16), names
// re-prefixed, extra tensors added.
fs::path rewrite_checkpoint(const std::string& tag, DType dtype, const std::string& prefix) {
  fs::path dir = fs::temp_directory_path() / ("dcuserve-variant-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "reference.json", "reference.safetensors"})
    fs::copy_file(kModel / f, dir / f);
  SafetensorsFile in((kModel / "model.safetensors").string());
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  auto add = [&](const std::string& name, const std::string& dtype_name, const std::vector<int64_t>& shape,
                 const std::string& bytes) {
    header[name] = {{"dtype", dtype_name}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  };
  for (const auto& [name, t] : in.tensors()) {
    std::string out_name = name;
    const std::string lm = "model.language_model.";
    if (name.rfind(lm, 0) == 0) out_name = prefix + name.substr(lm.size());
    if (t.dtype != DType::BF16 || dtype == DType::BF16) {
      add(out_name, t.dtype_name, t.shape, std::string(static_cast<const char*>(t.data), t.bytes));
      continue;
    }
    const auto* src = static_cast<const uint16_t*>(t.data);
    const size_t n = t.bytes / 2;
    std::string bytes(n * dtype_size(dtype), '\0');
    for (size_t i = 0; i < n; ++i) {
      const float v = bf16_to_f32(src[i]);
      if (dtype == DType::F32) std::memcpy(&bytes[i * 4], &v, 4);
      else {
        const uint16_t h = f32_to_f16(v);
        std::memcpy(&bytes[i * 2], &h, 2);
      }
    }
    add(out_name, std::string(dtype_name(dtype)), t.shape, bytes);
  }
  add("mtp.fc.weight", "BF16", {2, 2}, std::string(8, '\0'));
  add("model.visual.patch_embed.proj.bias", "F32", {2}, std::string(8, '\0'));
  const std::string text = header.dump();
  const uint64_t len = text.size();
  std::ofstream(dir / "model.safetensors", std::ios::binary)
      << std::string(reinterpret_cast<const char*>(&len), 8) << text << data;
  return dir;
}

void expect_reference_logits(const fs::path& dir, float tolerance) {
  LoadedModel model(dir.string());
  Reference ref((dir / "reference.safetensors").string());
  auto ids = ref.ints("prompt0.input_ids");
  auto expected = ref.floats("prompt0.logits");
  auto seq = model.start_sequence(ids);
  auto logits = model.step({{&seq, int(ids.size())}}, true);
  ASSERT_EQ(logits.size(), expected.size());
  EXPECT_LT(max_abs_diff(logits.data(), expected.data(), logits.size()), tolerance);
}

TEST(CheckpointVariants, F32WeightsWithCausalLmNamesAndExtraTensors) {
  fs::path dir = rewrite_checkpoint("f32", DType::F32, "model.");
  expect_reference_logits(dir, 1e-3f);  // the same values, exactly
  fs::remove_all(dir);
}

TEST(CheckpointVariants, F16Weights) {
  // bf16 -> f16 is exact in f16's normal range; the few tiny weights below it round.
  fs::path dir = rewrite_checkpoint("f16", DType::F16, "model.language_model.");
  expect_reference_logits(dir, 2e-3f);
  fs::remove_all(dir);
}

TEST(CheckpointVariants, Bf16MatricesConvertedToF16WhileLoading) {
  auto backend = make_cpu_backend();
  const std::string dir = kModel.string();
  ModelConfig config = load_model_config(dir);
  ModelWeights w = load_weights(dir, config, *backend, shard_plan(config, 0, 1), {}, {DType::F16});
  EXPECT_EQ(w.layers[0].mlp.up_proj.weight.dtype, DType::F16);
  EXPECT_EQ(w.layers[3].attn.q_proj.weight.dtype, DType::F16);
  EXPECT_EQ(w.layers[0].input_norm.dtype, DType::BF16);  // vectors stay as stored
  EXPECT_EQ(w.layers[0].gdn.A_log.dtype, DType::F32);
  // The same logits as the reference, within the rounding of f16 for the smallest weights.
  CacheShape shape{64, 16, 2, DType::F32};
  CacheStorage cache(*backend, config, shape);
  ModelRunner runner(*backend, config, std::move(w), cache, 256);
  Reference ref(dir + "/reference.safetensors");
  auto ids = ref.ints("prompt0.input_ids");
  auto expected = ref.floats("prompt0.logits");
  std::vector<int32_t> blocks;
  for (int b = 0; b < 8; ++b) blocks.push_back(b);
  SequenceStep step{ids, 0, blocks, 0, true};
  auto logits = runner.step_to_host(std::span<const SequenceStep>(&step, 1));
  EXPECT_LT(max_abs_diff(logits.data(), expected.data(), logits.size()), 2e-3f);
}

TEST(CheckpointVariants, MatrixBeyondF16RangeStaysF32) {
  // One weight of the first MLP set to 1e5 (representable in bf16, not in f16).
  fs::path dir = rewrite_checkpoint("overflow", DType::BF16, "model.language_model.");
  {
    std::string bytes;
    {
      std::ifstream in(dir / "model.safetensors", std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    const uint64_t offset = header["model.language_model.layers.0.mlp.up_proj.weight"]["data_offsets"][0];
    const uint16_t big = f32_to_bf16(1e5f);
    std::memcpy(&bytes[8 + n + offset], &big, 2);
    std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  }
  auto backend = make_cpu_backend();
  ModelConfig config = load_model_config(dir.string());
  ModelWeights w = load_weights(dir.string(), config, *backend, shard_plan(config, 0, 1), {}, {DType::F16});
  EXPECT_EQ(w.layers[0].mlp.up_proj.weight.dtype, DType::F32);
  EXPECT_FLOAT_EQ(w.layers[0].mlp.up_proj.weight.as<float>()[0], bf16_to_f32(f32_to_bf16(1e5f)));  // 99840, kept exactly
  EXPECT_EQ(w.layers[0].mlp.gate_proj.weight.dtype, DType::F16);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dcu::testing
