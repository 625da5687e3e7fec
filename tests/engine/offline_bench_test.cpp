// The offline bench's figures under tensor parallelism (2 simulated CPU ranks, the tiny fixture):
// every collective of a decode step is counted and timed (the embedding's and two per layer
// all-reduces, the logits' all-gather) at every batch size: the pass that leaves the collectives out
// does not leak into the next batch's measurement.

#include <gtest/gtest.h>

#include "comm/in_process_communicator.h"
#include "engine/offline_bench.h"
#include "model/sharding.h"

namespace dcu {
namespace {

const char* kTiny = "tests/data/tiny-qwen35";

BenchOptions small_run() {
  BenchOptions o;
  o.prompt_lens = {8};
  o.batches = {1, 2};
  o.decode_steps = 2;
  o.repeats = 1;
  return o;
}

TEST(OfflineBench, CountsAndTimesEveryCollectiveOfADecodeStep) {
  const ModelConfig config = load_model_config(kTiny);
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<Backend*> raw;
  for (int r = 0; r < 2; ++r) raw.push_back(backends.emplace_back(make_cpu_backend()).get());
  auto comms = make_in_process_communicators(raw);
  std::vector<BenchRank> ranks(2);
  for (int r = 0; r < 2; ++r)
    ranks[size_t(r)] = {raw[size_t(r)], load_weights(kTiny, config, *raw[size_t(r)], shard_plan(config, r, 2)),
                        comms[size_t(r)].get()};
  const BenchReport report = run_offline_bench(std::move(ranks), config, small_run());
  ASSERT_EQ(report.decode.size(), 2u);
  for (const DecodeResult& d : report.decode) {
    EXPECT_EQ(d.collectives_per_step, 2 * config.num_layers + 2) << "batch " << d.batch;
    EXPECT_GT(d.collective_s_per_step, 0.0) << "batch " << d.batch;
    EXPECT_GT(d.tokens_per_s, 0.0) << "batch " << d.batch;
  }
}

TEST(OfflineBench, OneRankHasNoCollectives) {
  const ModelConfig config = load_model_config(kTiny);
  auto backend = make_cpu_backend();
  BenchOptions o = small_run();
  o.prompt_lens = {8, 24};
  const BenchReport report = run_offline_bench(*backend, config, load_weights(kTiny, config, *backend), o);
  // The prefill figure counts the causal attention: per token, 4 d per q head and attention layer for
  // each of the (L + 1) / 2 positions it attends to on average, so it grows with the prompt.
  ASSERT_EQ(report.prefill.size(), 2u);
  const double per_position = 4.0 * config.head_dim * config.num_heads * config.num_full_attention_layers();
  EXPECT_DOUBLE_EQ(report.prefill[0].attention_flops_per_token, per_position * 9 / 2);
  EXPECT_DOUBLE_EQ(report.prefill[1].attention_flops_per_token, per_position * 25 / 2);
  EXPECT_EQ(report.prefill[0].flops_per_token, report.prefill[1].flops_per_token);
  for (const DecodeResult& d : report.decode) {
    EXPECT_EQ(d.collectives_per_step, 0);
    EXPECT_EQ(d.collective_cost_s_per_step, 0.0);
  }
}

}  // namespace
}  // namespace dcu
