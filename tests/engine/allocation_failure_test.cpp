// Failed backend allocations, injected through FailingAllocationBackend: the caches give back what they
// took when one fails at start-up, and a failure mid-run (scratch that grows with the batch) ends only
// the requests of that step, with an error, while the engine goes on serving exact outputs.

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/cache_plan.h"
#include "engine/llm_engine.h"
#include "model/config.h"
#include "model/sharding.h"
#include "model/weights.h"
#include "support/event_collector.h"
#include "support/failing_allocation_backend.h"
#include "support/model_fixture.h"
#include "support/tiny_engine_options.h"

namespace dcu {
namespace {

constexpr int kMaxModelLen = 256;
constexpr int kMaxTokensPerStep = 64;

TEST(AllocationFailure, CacheStorageGivesBackWhatItTookWhenOneAllocationFails) {
  testing::FailingAllocationBackend backend;
  const ModelConfig config = load_model_config(testing::kTinyModel);
  CacheShape shape;
  shape.num_blocks = 64;
  shape.num_state_slots = 4;
  shape.kv_dtype = DType::F32;
  {
    CacheStorage whole(backend, config, shape);
    EXPECT_GT(backend.live(), 2);
  }
  ASSERT_EQ(backend.live(), 0);
  const size_t per_layer_kv = size_t(shape.num_blocks) * shape.block_size * config.num_kv_heads * config.head_dim * 4;
  backend.fail_above(per_layer_kv - 1);  // the GDN state buffers are smaller: the first KV buffer fails
  EXPECT_THROW(CacheStorage(backend, config, shape), Error);
  EXPECT_EQ(backend.failures(), 1);
  EXPECT_EQ(backend.live(), 0) << "the buffers allocated before the failure were not released";
}

// The engine on the tiny fixture over a FailingAllocationBackend (create_engine makes its own backends).
struct EngineOnFailingBackend {
  testing::FailingAllocationBackend* backend = nullptr;
  std::unique_ptr<LlmEngine> engine;

  EngineOnFailingBackend() {
    auto owned = std::make_unique<testing::FailingAllocationBackend>();
    backend = owned.get();
    const ModelConfig config = load_model_config(testing::kTinyModel);
    CachePlanRequest plan;
    plan.budget_bytes = 8 << 20;
    plan.max_model_len = kMaxModelLen;
    plan.max_num_seqs = 8;
    RankInstance rank;
    rank.backend = std::move(owned);
    rank.cache = std::make_unique<CacheStorage>(*rank.backend, config, plan_cache(config, plan));
    rank.runner = std::make_unique<ModelRunner>(
        *rank.backend, config, load_weights(testing::kTinyModel, config, *rank.backend, shard_plan(config, 0, 1)),
        *rank.cache, kMaxTokensPerStep);
    ModelInstance model;
    model.ranks.push_back(std::move(rank));
    LlmEngineOptions options;
    options.limits.max_num_seqs = 8;
    options.limits.max_num_batched_tokens = kMaxTokensPerStep;
    options.max_model_len = kMaxModelLen;
    engine = std::make_unique<LlmEngine>(std::move(model), options);
  }
};

GenerationRequest greedy(const testing::ReferenceCase& c) {
  GenerationRequest r;
  r.prompt = c.ids;
  r.sampling.temperature = 0;
  r.sampling.max_tokens = int(c.greedy.size());
  r.sampling.ignore_eos = true;
  return r;
}

// Submits every case at once and waits for all of them.
std::vector<std::unique_ptr<testing::EventCollector>> run_all(Engine& engine,
                                                              const std::vector<testing::ReferenceCase>& cases) {
  std::vector<GenerationRequest> requests;
  std::vector<EventCallback> callbacks;
  std::vector<std::unique_ptr<testing::EventCollector>> out;
  for (const auto& c : cases) {
    out.push_back(std::make_unique<testing::EventCollector>());
    requests.push_back(greedy(c));
    callbacks.push_back(out.back()->callback());
  }
  EXPECT_TRUE(std::holds_alternative<std::vector<RequestId>>(engine.submit_all(requests, callbacks)));
  for (auto& o : out) o->wait();
  return out;
}

TEST(AllocationFailure, MidRunFailureEndsOnlyThatStepsRequestsAndLaterOnesSucceed) {
  EngineOnFailingBackend e;
  const auto cases = testing::reference_cases(testing::kTinyModel, 200);
  ASSERT_GE(cases.size(), 3u);
  // One short request first: the scratch that grows with the batch is sized for it.
  const std::vector<testing::ReferenceCase> first = {cases[0]};
  auto warm = run_all(*e.engine, first);
  ASSERT_EQ(*warm[0]->finished, FinishReason::Length);
  ASSERT_EQ(warm[0]->ids, cases[0].greedy);

  // A larger batch grows that scratch: the growth fails once.
  e.backend->fail_next(1);
  auto failed_run = run_all(*e.engine, cases);
  ASSERT_EQ(e.backend->failures(), 1) << "no allocation happened mid-run: the test no longer reaches the path";
  int errors = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (*failed_run[i]->finished == FinishReason::Error) {
      ++errors;
      EXPECT_NE(failed_run[i]->error.find("out of host memory allocating"), std::string::npos) << failed_run[i]->error;
    } else {
      EXPECT_EQ(*failed_run[i]->finished, FinishReason::Length) << cases[i].key;
      EXPECT_EQ(failed_run[i]->ids, cases[i].greedy) << cases[i].key;
    }
  }
  EXPECT_GE(errors, 1);

  // The engine goes on: the same batch again, every output exact, and every page and slot given back.
  auto again = run_all(*e.engine, cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(*again[i]->finished, FinishReason::Length) << cases[i].key << ": " << again[i]->error;
    EXPECT_EQ(again[i]->ids, cases[i].greedy) << cases[i].key;
  }
  const EngineStats stats = e.engine->stats();
  EXPECT_EQ(stats.kv_cache_usage, 0.0);
  EXPECT_EQ(stats.state_slot_usage, 0.0);
}

}  // namespace
}  // namespace dcu
