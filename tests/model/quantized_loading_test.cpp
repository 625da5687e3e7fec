// Loading quantized checkpoints through load_weights on the CPU, on GPTQ copies of the tiny fixture made
// by tests/support/gptq_copy.h: the copy gives the logits of its dequantized twin (one rank and two),
// --quantization int8 quantizes what it keeps in 16 bits, and broken copies (a truncated packed tensor,
// a wrong group size, an unsupported method or bit width, a scale no weight claims, a rank split that cuts
// a group, a --quantization that disagrees) fail with an error that names the problem; act-order MLPs load
// on one rank and on two, an act-order o_proj on two ranks requantized to int8.

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "model/config.h"
#include "model/weights.h"
#include "support/gptq_copy.h"
#include "support/model_fixture.h"
#include "support/tp_model.h"

namespace dcu::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kTiny = "tests/data/tiny-qwen35";
constexpr const char* kPrefix = "model.language_model.";

class QuantizedLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dcuserve-gptq-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path copy(const GptqCopyOptions& options = {}, bool with_twin = false) {
    write_gptq_copy(kTiny, root_ / "gptq", with_twin ? root_ / "dense" : fs::path(), options);
    return root_ / "gptq";
  }
  // load_weights of `dir` at rank 0 of `ranks`; the error message, "" when it loaded.
  static std::string load_error(const fs::path& dir, int ranks = 1, WeightFormat rest = WeightFormat::Dense) {
    try {
      auto backend = make_cpu_backend();
      const ModelConfig c = load_model_config(dir.string());
      load_weights(dir.string(), c, *backend, shard_plan(c, 0, ranks), {}, {std::nullopt, rest});
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }
  static void edit_config(const fs::path& dir, const std::function<void(json&)>& edit) {
    json j = json::parse(std::ifstream(dir / "config.json"));
    edit(j["quantization_config"]);
    std::ofstream(dir / "config.json") << j.dump();
  }
  // Rewrites the safetensors header with `edit` applied; the data section is kept.
  static void edit_header(const fs::path& dir, const std::function<void(json&)>& edit) {
    std::ifstream in(dir / "model.safetensors", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    json header = json::parse(bytes.substr(8, n));
    edit(header);
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    const uint64_t m = text.size();
    std::ofstream(dir / "model.safetensors", std::ios::binary)
        << std::string(reinterpret_cast<const char*>(&m), 8) << text << bytes.substr(8 + n);
  }

  fs::path root_;
};

std::vector<float> prefill(SteppedModel& model, const std::vector<int32_t>& ids) {
  auto seq = model.start_sequence(ids);
  std::vector<float> logits = model.step({{&seq, int(ids.size())}}, true);
  model.finish_sequence(seq);
  return logits;
}

TEST_F(QuantizedLoading, GptqCopyGivesTheLogitsOfItsDequantizedTwin) {
  const fs::path dir = copy({}, true);
  LoadedModel quantized(dir.string()), dense((root_ / "dense").string());
  const int64_t V = quantized.config.vocab_size;
  for (int salt : {1, 2}) {
    const std::vector<int32_t> prompt = prompt_of(23 + salt, V, salt);
    const std::vector<float> a = prefill(quantized, prompt), b = prefill(dense, prompt);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_LT(max_abs_diff(a.data(), b.data(), a.size()), 1e-4f) << "prompt " << salt;
    EXPECT_EQ(quantized.greedy(prompt, 12), dense.greedy(prompt, 12)) << "prompt " << salt;
  }
}

TEST_F(QuantizedLoading, GptqCopyOnTwoRanksMatchesOneRank) {
  const fs::path dir = copy();
  TpModel one(dir.string(), 1), two(dir.string(), 2);
  expect_same_steps(one, two, 1e-4f);
}

TEST_F(QuantizedLoading, ShippedMatricesLoadAsShippedAndInt8QuantizesTheRest) {
  const fs::path dir = copy();
  auto backend = make_cpu_backend();
  const ModelConfig c = load_model_config(dir.string());
  for (WeightFormat rest : {WeightFormat::Dense, WeightFormat::Int8}) {
    const ModelWeights w = load_weights(dir.string(), c, *backend, shard_plan(c, 0, 1), {}, {std::nullopt, rest});
    const LayerWeights& gdn = w.layers[0];
    const LayerWeights& attn = w.layers[3];
    ASSERT_EQ(attn.type, LayerType::FullAttention);
    EXPECT_EQ(gdn.mlp.gate_proj.format, WeightFormat::Int4);
    EXPECT_EQ(attn.mlp.down_proj.format, WeightFormat::Int4);
    EXPECT_EQ(attn.attn.q_proj.format, rest);
    EXPECT_EQ(gdn.gdn.in_proj_qkv.format, rest);
    EXPECT_EQ(w.lm_head.format, rest);
    EXPECT_EQ(gdn.gdn.in_proj_a.format, WeightFormat::Dense);  // keeps_16_bit
  }
}

TEST_F(QuantizedLoading, TruncatedPackedTensor) {
  const fs::path dir = copy();
  edit_header(dir, [](json& h) {
    json& t = h[std::string(kPrefix) + "layers.1.mlp.up_proj.qweight"];  // [256 / 8, 768] I32
    t["shape"] = {31, 768};
    t["data_offsets"][1] = t["data_offsets"][1].get<int64_t>() - 768 * 4;
  });
  const std::string e = load_error(dir);
  EXPECT_NE(e.find("layers.1.mlp.up_proj.qweight is I32 [31, 768]"), std::string::npos) << e;
  EXPECT_NE(e.find("needs I32 [32, 768]"), std::string::npos) << e;
}

TEST_F(QuantizedLoading, WrongGroupSize) {
  const fs::path dir = copy();
  edit_config(dir, [](json& q) { q["group_size"] = 64; });
  // down_proj's g_idx is read first (its column order decides which MLP rows a rank reads)
  std::string e = load_error(dir);
  EXPECT_NE(e.find("layers.0.mlp.down_proj.g_idx gives group 0 128 input features, not the group size 64"),
            std::string::npos)
      << e;
  // without g_idx tensors, the packed zero points' shape tells
  edit_header(dir, [](json& h) {
    for (auto it = h.begin(); it != h.end();) it = it.key().ends_with(".g_idx") ? h.erase(it) : std::next(it);
  });
  e = load_error(dir);
  EXPECT_NE(e.find("mlp.gate_proj.qzeros is I32 [2, 96]"), std::string::npos) << e;
  EXPECT_NE(e.find("group 64"), std::string::npos) << e;
}

TEST_F(QuantizedLoading, UnsupportedMethodAndBitWidth) {
  const fs::path dir = copy();
  edit_config(dir, [](json& q) { q["quant_method"] = "exl2"; });
  EXPECT_NE(load_error(dir).find("quant_method \"exl2\" is not supported (supported: gptq, awq, compressed-tensors, fp8)"),
            std::string::npos)
      << load_error(dir);
  edit_config(dir, [](json& q) { q["quant_method"] = "gptq", q["bits"] = 3; });
  EXPECT_NE(load_error(dir).find("GPTQ bits 3 is not supported"), std::string::npos) << load_error(dir);
}

TEST_F(QuantizedLoading, ScaleNoWeightClaims) {
  const fs::path dir = copy();
  const std::string stray = std::string(kPrefix) + "layers.3.self_attn.q_proj.scales";  // q_proj stays dense
  edit_header(dir, [&](json& h) { h[stray] = h[std::string(kPrefix) + "layers.3.mlp.up_proj.scales"]; });
  const std::string e = load_error(dir);
  EXPECT_NE(e.find("1 quantization tensor(s) belong to no quantized module the model reads: " + stray),
            std::string::npos)
      << e;
}

TEST_F(QuantizedLoading, WeightWithoutItsScales) {
  const fs::path dir = copy();
  edit_header(dir, [](json& h) { h.erase(std::string(kPrefix) + "layers.5.mlp.down_proj.scales"); });
  const std::string e = load_error(dir);
  EXPECT_NE(e.find(std::string(kPrefix) + "layers.5.mlp.down_proj.scales (the module is GPTQ 4-bit"), std::string::npos)
      << e;
}

// Act-order: groups of input features out of order. gate_proj and up_proj read their inputs through
// Linear::k_order; down_proj's come in its column order (the MLP's rows are loaded in that order).
TEST_F(QuantizedLoading, ActOrderCopyGivesTheLogitsOfItsDequantizedTwin) {
  GptqCopyOptions options;
  options.act_order = true;
  const fs::path dir = copy(options, true);
  LoadedModel quantized(dir.string()), dense((root_ / "dense").string());
  const int64_t V = quantized.config.vocab_size;
  const std::vector<int32_t> prompt = prompt_of(25, V, 3);
  const std::vector<float> a = prefill(quantized, prompt), b = prefill(dense, prompt);
  EXPECT_LT(max_abs_diff(a.data(), b.data(), a.size()), 1e-4f);
  EXPECT_EQ(quantized.greedy(prompt, 12), dense.greedy(prompt, 12));
  auto backend = make_cpu_backend();
  const ModelConfig c = load_model_config(dir.string());
  const ModelWeights w = load_weights(dir.string(), c, *backend, shard_plan(c, 0, 1), {}, {});
  EXPECT_FALSE(w.layers[0].mlp.gate_proj.k_order.empty());
  EXPECT_TRUE(w.layers[0].mlp.down_proj.k_order.empty());
}

// Two ranks split down_proj's canonical columns (whole groups, whose input features act-order scatters:
// with g_idx k % 6 a rank's 3 groups are the intermediate rows k % 6 in {0, 1, 2} or {3, 4, 5}), and take
// the gate_proj and up_proj rows that produce them: the dequantized twin's logits, step by step.
TEST_F(QuantizedLoading, ActOrderMlpOnTwoRanksGivesTheLogitsOfItsDequantizedTwin) {
  GptqCopyOptions options;
  options.act_order = true;
  const fs::path dir = copy(options, true);
  TpModel dense((root_ / "dense").string(), 1), two(dir.string(), 2);
  expect_same_steps(dense, two, 1e-4f);
}

// An act-order o_proj on two ranks: its input features come from attention heads, which ranks split as
// stored, so each rank requantizes its columns to int8 (groups of 128). The dequantized twin's logits,
// step by step, within what that rounding adds: at most a tenth of the distance between the twin and
// the 16-bit fixture it was quantized from (the 4-bit rounding of every quantized matrix; measured
// 0.017 against 3.4). The rank's o_proj is int8, in its inputs' order.
TEST_F(QuantizedLoading, ActOrderAttentionOnTwoRanksIsRequantizedToInt8) {
  GptqCopyOptions options;
  options.act_order = options.attention = true;
  const fs::path dir = copy(options, true);
  TpModel original(kTiny.string(), 1), dense((root_ / "dense").string(), 1), two(dir.string(), 2);
  const float quantization = expect_same_steps(original, dense, INFINITY);
  const float requantization = expect_same_steps(dense, two, quantization / 10);
  std::printf("largest logit difference: 4-bit copy %g, requantized on two ranks %g\n", quantization, requantization);
  auto backend = make_cpu_backend();
  const ModelConfig c = load_model_config(dir.string());
  const ModelWeights w = load_weights(dir.string(), c, *backend, shard_plan(c, 0, 2), {}, {});
  const Linear& o_proj = w.layers[3].attn.o_proj;
  EXPECT_EQ(o_proj.format, WeightFormat::Int8);
  EXPECT_TRUE(o_proj.k_order.empty());
  EXPECT_EQ(o_proj.cols(), int64_t(c.num_heads) * c.head_dim / 2);
}

TEST_F(QuantizedLoading, RankSplitThatCutsAGroupNamesTheSizesThatWork) {
  GptqCopyOptions options;
  options.group = 256;  // down_proj: K = 768 is three groups; two ranks would take 384 columns each
  const fs::path dir = copy(options);
  EXPECT_EQ(load_error(dir, 1), "");
  const std::string e = load_error(dir, 2);
  EXPECT_NE(e.find("layers.0.mlp.down_proj.weight: at --tensor-parallel-size 2 each rank reads 384 of its 768 input "
                   "columns (this rank [0, 384)), which cuts its quantization groups of 256"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("tensor-parallel sizes that keep every quantized group whole: 1"), std::string::npos) << e;
}

// create_engine checks --quantization against the checkpoint before it sets up a device.
TEST_F(QuantizedLoading, QuantizationFlagThatDisagreesWithTheCheckpoint) {
  auto engine_error = [](const fs::path& dir, const std::string& flag) {
    EngineOptions o;
    o.model_dir = dir.string();
    o.device = "cpu";
    o.quantization = flag;
    try {
      create_engine(o);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  const fs::path dir = copy();
  std::string e = engine_error(dir, "awq");
  EXPECT_NE(e.find("--quantization awq does not match the checkpoint, whose quantization_config says quant_method "
                   "\"gptq\""),
            std::string::npos)
      << e;
  e = engine_error(kTiny, "gptq");
  EXPECT_NE(e.find("--quantization gptq: the checkpoint is not quantized"), std::string::npos) << e;
}

}  // namespace
}  // namespace dcu::testing
