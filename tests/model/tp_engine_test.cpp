// The engine with tensor parallelism on simulated CPU ranks: concurrent greedy requests on the tiny
// fixture reproduce the transformers reference continuations; sizes that do not divide the model and
// multi-node requests fail with a message.

#include <condition_variable>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/engine_factory.h"
#include "support/event_collector.h"
#include "support/tiny_engine_options.h"

namespace dcu {
namespace {

const std::string& kModel = testing::kTinyModel;
EngineOptions options(int tensor_parallel_size) { return testing::tiny_engine_options(tensor_parallel_size); }

TEST(TensorParallelEngine, TwoCpuRanksReproduceReferenceGreedy) {
  auto engine = create_engine(options(2));
  auto j = nlohmann::json::parse(std::ifstream(kModel + "/reference.json"));
  std::vector<std::vector<int32_t>> expected;
  std::vector<std::unique_ptr<testing::EventCollector>> out;
  for (const char* group : {"prompts", "chats"})
    for (const auto& c : j[group]) {
      if (c["ids"].size() >= 200) continue;
      GenerationRequest r;
      r.prompt = c["ids"].get<std::vector<int32_t>>();
      expected.push_back(c["greedy_ids"].get<std::vector<int32_t>>());
      r.sampling.temperature = 0;
      r.sampling.max_tokens = int(expected.back().size());
      r.sampling.ignore_eos = true;
      out.push_back(std::make_unique<testing::EventCollector>());
      auto id = engine->submit(std::move(r), out.back()->callback());
      ASSERT_TRUE(std::holds_alternative<RequestId>(id));
    }
  ASSERT_FALSE(out.empty());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i]->wait();
    EXPECT_EQ(*out[i]->finished, FinishReason::Length) << out[i]->error;
    EXPECT_EQ(out[i]->ids, expected[i]) << "case " << i;
  }
}

TEST(TensorParallelEngine, SizeThatDoesNotDivideTheModelIsRefused) {
  try {
    create_engine(options(3));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide"), std::string::npos) << e.what();
  }
}

TEST(TensorParallelEngine, MultiNodeArgumentsAreChecked) {
  EngineOptions o = options(2);
  o.nnodes = 2;
  o.node_rank = 2;
  EXPECT_THROW(create_engine(o), Error);
  o.node_rank = 0;
  o.tensor_parallel_size = 1;
  EXPECT_THROW(create_engine(o), Error);  // 1 rank cannot span 2 nodes
}

}  // namespace
}  // namespace dcu
