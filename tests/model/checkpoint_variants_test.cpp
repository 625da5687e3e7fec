// The same weights in the other layouts Hugging Face produces load and give the reference logits:
// F32 and F16 tensors instead of BF16, `model.*` names (Qwen3_5ForCausalLM) instead of
// `model.language_model.*`, and extra `mtp.*` / `model.visual.*` tensors that are recognised and skipped.

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = "tests/data/tiny-qwen35";

// Rewrites the tiny checkpoint: BF16 tensors converted to `dtype`, names re-prefixed, extra tensors added.
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
    if (t.dtype != DType::BF16) {
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

}  // namespace
}  // namespace dcu::testing
