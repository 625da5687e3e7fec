// Tensor parallelism on simulated CPU ranks against the same model on one rank: logits within 1e-4
// and equal greedy continuations, for 2, 3, 4 and 8 ranks (KV-head replication at 8), on the tiny
// Hugging Face fixture (whose greedy continuations are also checked against transformers) and on
// random weights with Qwen3.5-27B head counts.

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/sharding.h"
#include "support/model_fixture.h"
#include "support/tp_model.h"

namespace dcu::testing {
namespace {

constexpr float kTolerance = 1e-4f;
const char* kTiny = "tests/data/tiny-qwen35";
const char* k27bHeads = "tests/data/tp-27b-heads";  // 24 q / 4 kv heads, 16 / 48 GDN heads, small widths
const char* k3way = "tests/data/tp-3way";           // 6 q / 3 kv heads, 3 / 6 GDN heads

struct Case {
  const char* dir;
  int ranks;
  int64_t seed;  // -1: the checkpoint's weights
};

class TensorParallelTest : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallelTest, LogitsAndGreedyMatchOneRank) {
  const Case c = GetParam();
  TpModel one(c.dir, 1, c.seed), many(c.dir, c.ranks, c.seed);
  expect_same_steps(one, many, kTolerance);
  const int64_t V = one.config.vocab_size;
  for (int salt : {3, 4}) {
    const std::vector<int32_t> prompt = prompt_of(9 + salt, V, salt);
    EXPECT_EQ(one.greedy(prompt, 12), many.greedy(prompt, 12)) << "prompt " << salt;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TensorParallelTest,
                         ::testing::Values(Case{kTiny, 2, -1}, Case{k3way, 3, 11}, Case{k27bHeads, 2, 7},
                                           Case{k27bHeads, 4, 7}, Case{k27bHeads, 8, 7}),
                         [](const auto& info) {
                           const std::string dir = info.param.dir;
                           const char* model = dir == kTiny ? "tiny" : dir == k3way ? "threeway" : "heads27b";
                           return model + std::string("_") + std::to_string(info.param.ranks) + "_ranks";
                         });

// The tiny fixture split over two ranks reproduces transformers' greedy continuations.
TEST(TensorParallelGolden, TwoRanksReproduceReferenceGreedy) {
  std::ifstream in(std::string(kTiny) + "/reference.json");
  auto j = nlohmann::json::parse(in);
  TpModel model(kTiny, 2);
  int checked = 0;
  for (const char* group : {"prompts", "chats"})
    if (j.contains(group))
      for (const auto& c : j[group]) {
        auto ids = c["ids"].get<std::vector<int32_t>>();
        auto expected = c["greedy_ids"].get<std::vector<int32_t>>();
        EXPECT_EQ(model.greedy(ids, expected.size()), expected) << c["key"];
        ++checked;
      }
  EXPECT_GT(checked, 0);
}

// Load-time quantization under tensor parallelism: each rank quantizes its own slices. With every
// rank's share of every matrix a whole number of 128-k groups (the 27B-heads fixture with head dims of
// 32: 768-wide attention and GDN outputs), the ranks hold exactly the groups one rank holds, so the
// outputs match one rank as closely as 16-bit weights do.
TEST(TensorParallelQuantized, RanksQuantizeTheirSlicesAsOneRankDoes) {
  ModelConfig c = load_model_config(k27bHeads);
  c.head_dim = 32, c.rotary_dim = 8;
  for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Fp8}) {
    TpSetup setup;
    setup.weights.quantize = f;
    TpModel one(c, 1, 5, setup), two(c, 2, 5, setup);
    expect_same_steps(one, two, kTolerance);
    const std::vector<int32_t> prompt = prompt_of(11, c.vocab_size, 2);
    EXPECT_EQ(one.greedy(prompt, 10), two.greedy(prompt, 10)) << weight_format_name(f);
  }
}

TEST(TensorParallelPlan, ReplicatedKvHeadIsTheOneTheRanksQueryHeadsUse) {
  ModelConfig c = load_model_config(k27bHeads);  // 24 q heads in 4 groups of 6
  for (int r = 0; r < 8; ++r) {
    ShardPlan p = shard_plan(c, r, 8);
    EXPECT_EQ(p.num_heads, 3);
    EXPECT_EQ(p.num_kv_heads, 1);
    EXPECT_EQ(p.kv_head_begin, p.q_head_begin / 6) << "rank " << r;
    EXPECT_EQ((p.q_head_begin + p.num_heads - 1) / 6, p.kv_head_begin) << "rank " << r;
  }
  // Vocabulary 1001 over 8 ranks: 126 rows each, the last rank 119.
  EXPECT_EQ(shard_plan(c, 7, 8).vocab_rows, 1001 - 7 * 126);
}

TEST(TensorParallelPlan, SizesThatDoNotDivideTheModelAreRejectedWithTheSizesThatDo) {
  ModelConfig tiny = load_model_config(kTiny);
  try {
    check_tensor_parallel(tiny, 3);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("num_attention_heads 4"), std::string::npos) << m;
    EXPECT_NE(m.find("sizes that work: 1, 2"), std::string::npos) << m;
  }
  EXPECT_EQ(valid_tensor_parallel_sizes(load_model_config(k27bHeads), 8), (std::vector<int>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace dcu::testing
