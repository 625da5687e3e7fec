// Tensor parallelism on the GPU backend against one GPU rank.
// - Ranks that share GPU 0 (collectives through host memory: the in-process communicator) run the
//   sharded shapes of every kernel at any size on one GPU: Qwen3.5-27B's head counts at 2, 4 and 8
//   ranks (its 4 KV heads replicated at 8), and its full widths (hidden 5120, 248,320-token
//   vocabulary, intermediate 17,408) in a 4-layer model at 4 and 8 ranks.
// - One GPU per rank with NCCL/RCCL: the real collectives, with decode steps recorded as graphs (the
//   collectives inside them): the tiny fixture and the demo model on two GPUs against the same steps
//   launched op by op, one GPU and transformers; the 27B widths on 2, 4 and 8 GPUs (as many as the
//   machine has).
// Logits within 1e-2 (the bf16 mode's tolerance against an f32 reference: each side is that close to
// the exact sum, which is split and ordered differently over the ranks) and identical greedy
// continuations of the golden prompts. Skips without a GPU.

#include <atomic>
#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include "backend/gpu_backend_api.h"
#include "comm/nccl_communicator.h"
#include "model/config.h"
#include "support/model_fixture.h"
#include "support/tp_model.h"

namespace dcu::testing {
namespace {

constexpr float kTolerance = 1e-2f;
const char* kTiny = "tests/data/tiny-qwen35";
const char* k27bHeads = "tests/data/tp-27b-heads";

std::unique_ptr<Backend> gpu(int device) { return make_gpu_backend(device, gpu_options_for_dtype("bfloat16")); }

// Every rank on GPU 0, in-process collectives.
TpSetup shared_gpu() {
  TpSetup s;
  s.backend = [](int) { return gpu(0); };
  return s;
}

// Counts the collectives the host calls: a replayed graph runs its recorded ones without a call.
class CountingCommunicator final : public Communicator {
 public:
  CountingCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<std::atomic<int>> calls)
      : inner_(std::move(inner)), calls_(std::move(calls)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void all_reduce_sum(Tensor x) override {
    ++*calls_;
    inner_->all_reduce_sum(x);
  }
  void all_gather(const Tensor& local, Tensor out) override {
    ++*calls_;
    inner_->all_gather(local, out);
  }
  void abort() override { inner_->abort(); }
  bool records_in_graphs() const override { return inner_->records_in_graphs(); }

 private:
  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<std::atomic<int>> calls_;
};

// Rank r on GPU r, NCCL/RCCL collectives, counted into `calls` (of every rank) when given.
TpSetup gpu_per_rank(bool graphs, std::shared_ptr<std::atomic<int>> calls = nullptr) {
  TpSetup s;
  s.backend = [](int rank) { return gpu(rank); };
  s.communicators = [calls](const std::vector<Backend*>& backends) {
    NcclGroupOptions o;
    for (int r = 0; r < int(backends.size()); ++r) o.devices.push_back(r);
    o.world_size = int(backends.size());
    auto comms = make_nccl_communicators(o, backends);
    if (calls)
      for (auto& c : comms) c = std::make_unique<CountingCommunicator>(std::move(c), calls);
    return comms;
  };
  s.graphs = graphs;
  return s;
}

// The golden prompts (the tiny fixture's reference.json; ids modulo the vocabulary), greedy, on both
// models.
void expect_same_greedy(SteppedModel& one, SteppedModel& many, size_t tokens) {
  for (ReferenceCase c : reference_cases(kTiny)) {
    for (int32_t& id : c.ids) id %= int32_t(one.config.vocab_size);
    EXPECT_EQ(one.greedy(c.ids, tokens), many.greedy(c.ids, tokens)) << c.key;
  }
}

bool has_gpus(int count) { return int(list_gpu_devices().size()) >= count; }

class SharedGpuRanks : public ::testing::TestWithParam<int> {};

TEST_P(SharedGpuRanks, HeadCountsOf27bMatchOneRank) {
  if (!has_gpus(1)) GTEST_SKIP() << "no GPU present";
  TpModel one(k27bHeads, 1, 7, shared_gpu()), many(k27bHeads, GetParam(), 7, shared_gpu());
  std::printf("  %d ranks: max |logit difference| = %.2e\n", GetParam(), double(expect_same_steps(one, many, kTolerance)));
  expect_same_greedy(one, many, 12);
}

INSTANTIATE_TEST_SUITE_P(Ranks, SharedGpuRanks, ::testing::Values(2, 4, 8));

// Qwen3.5-27B's widths and vocabulary over its first 4 layers (3 Gated DeltaNet, 1 attention).
ModelConfig widths_of_27b() {
  ModelConfig c = *builtin_config("27B");
  c.num_layers = 4;
  c.layer_types.resize(4);
  return c;
}

TEST(SharedGpuRanks27bWidths, FourAndEightRanksMatchOneRank) {
  if (!has_gpus(1)) GTEST_SKIP() << "no GPU present";
  // Weights 8 GB per model, and 3 GB of logit buffers per rank.
  if (list_gpu_devices()[0].free_memory < (size_t(64) << 30)) GTEST_SKIP() << "needs 64 GiB free on GPU 0";
  const ModelConfig config = widths_of_27b();
  TpModel one(config, 1, 5, shared_gpu());
  for (int ranks : {4, 8}) {
    TpModel many(config, ranks, 5, shared_gpu());
    std::printf("  %d ranks: max |logit difference| = %.2e\n", ranks, double(expect_same_steps(one, many, kTolerance)));
    expect_same_greedy(one, many, 8);
  }
}

// One GPU per rank (2, 4 or 8 as the machine has them), NCCL/RCCL, decode steps as graphs.
class NcclRanks27bWidths : public ::testing::TestWithParam<int> {};

TEST_P(NcclRanks27bWidths, MatchOneGpu) {
  if (!has_gpus(GetParam())) GTEST_SKIP() << "needs " << GetParam() << " GPUs";
  if (!nccl_compiled()) GTEST_SKIP() << "this build has no NCCL/RCCL";
  const ModelConfig config = widths_of_27b();
  TpModel one(config, 1, 5, shared_gpu()), many(config, GetParam(), 5, gpu_per_rank(true));
  std::printf("  %d GPUs: max |logit difference| = %.2e\n", GetParam(), double(expect_same_steps(one, many, kTolerance)));
  expect_same_greedy(one, many, 8);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclRanks27bWidths, ::testing::Values(2, 4, 8));

// The checkpoints with transformers references on two GPUs, with and without graphs.
class NcclRanksGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclRanksGolden, TwoGpusWithAndWithoutGraphsMatchOneGpuAndTransformers) {
  if (!has_gpus(2)) GTEST_SKIP() << "needs 2 GPUs";
  if (!nccl_compiled()) GTEST_SKIP() << "this build has no NCCL/RCCL";
  const std::string dir = GetParam();
  auto graph_calls = std::make_shared<std::atomic<int>>(0), eager_calls = std::make_shared<std::atomic<int>>(0);
  TpModel one(dir, 1, -1, shared_gpu()), graphs(dir, 2, -1, gpu_per_rank(true, graph_calls)),
      eager(dir, 2, -1, gpu_per_rank(false, eager_calls));
  std::printf("  graphs: max |logit difference| = %.2e\n", double(expect_same_steps(one, graphs, kTolerance)));
  std::printf("  eager:  max |logit difference| = %.2e\n", double(expect_same_steps(one, eager, kTolerance)));
  // 40 decode steps: the first of a shape runs op by op, the second records its graph, the rest replay.
  const std::vector<int32_t> prompt = prompt_of(23, one.config.vocab_size, 5);
  auto a = graphs.start_sequence(prompt), b = eager.start_sequence(prompt);
  graphs.step({{&a, int(prompt.size())}}, false), eager.step({{&b, int(prompt.size())}}, false);
  *graph_calls = 0, *eager_calls = 0;
  for (int step = 0; step < 40; ++step) {
    const int32_t token = int32_t((step * 37 + 11) % one.config.vocab_size);
    a.tokens.push_back(token), b.tokens.push_back(token);
    const std::vector<float> la = graphs.step({{&a, 1}}, false), lb = eager.step({{&b, 1}}, false);
    ASSERT_EQ(la.size(), lb.size());
    EXPECT_LT(max_abs_diff(la.data(), lb.data(), la.size()), 1e-4f) << "step " << step;
  }
  // The host called the collectives of the steps that ran op by op or recorded a graph: 2 of each of
  // the 2 shapes (block tables of 2 and 4 pages), against all 40 steps op by op.
  EXPECT_GT(*eager_calls, 0);
  EXPECT_LT(*graph_calls, *eager_calls / 4) << "decode steps did not replay graphs";
  graphs.finish_sequence(a), eager.finish_sequence(b);
  for (const ReferenceCase& c : reference_cases(dir)) {
    EXPECT_EQ(graphs.greedy(c.ids, c.greedy.size()), c.greedy) << c.key << " (graphs)";
    EXPECT_EQ(eager.greedy(c.ids, c.greedy.size()), c.greedy) << c.key << " (op by op)";
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, NcclRanksGolden, ::testing::Values(kTiny, "models/dcuserve-demo"),
                         [](const auto& info) { return info.param == kTiny ? "tiny" : "demo"; });

}  // namespace
}  // namespace dcu::testing
