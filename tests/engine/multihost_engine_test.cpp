// Multi-host tensor parallelism with two simulated nodes in one process: node 0 is the engine
// (create_engine) with one CPU rank, node 1 the follower loop (run_follower_node) with one CPU rank on
// another thread. Their ranks form ONE in-process group of two and the nodes talk over the real TCP
// step channel on localhost. Greedy tokens equal a single-rank engine's; a node that crashes in the
// middle of a step ends the other with an error naming it (no hang); nodes whose flags differ refuse
// to start.

#include <future>

#include <gtest/gtest.h>

#include "comm/in_process_communicator.h"
#include "core/error.h"
#include "engine/engine_factory.h"
#include "engine/follower_node.h"
#include "support/event_collector.h"
#include "support/tiny_engine_options.h"
#include "support/model_fixture.h"
#include "support/test_port.h"

namespace dcu {
namespace {

const std::string& kModel = testing::kTinyModel;
EngineOptions options(int tensor_parallel_size) { return testing::tiny_engine_options(tensor_parallel_size); }

EngineOptions node_options(int node_rank, int port) {
  EngineOptions o = options(2);
  o.nnodes = 2;
  o.node_rank = node_rank;
  o.master_port = port;
  return o;
}

// Forwards to a communicator of the group until collective number `crash_at` (1-based), which throws
// as if this rank's process died there. A dead process aborts nobody: from then on abort() no longer
// reaches the group, so only the other node's reaction to the lost connection can release its ranks.
class CrashingCommunicator final : public Communicator {
 public:
  CrashingCommunicator(std::unique_ptr<Communicator> inner, int crash_at) : inner_(std::move(inner)), crash_at_(crash_at) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return "crashing " + inner_->name(); }
  void all_reduce_sum(Tensor x) override {
    count();
    inner_->all_reduce_sum(x);
  }
  void all_gather(const Tensor& local, Tensor out) override {
    count();
    inner_->all_gather(local, out);
  }
  void abort() override {
    if (!crashed_) inner_->abort();
  }

 private:
  void count() {
    if (++calls_ == crash_at_) {
      crashed_ = true;
      throw Error("simulated crash in collective " + std::to_string(crash_at_));
    }
  }
  std::unique_ptr<Communicator> inner_;
  int crash_at_, calls_ = 0;
  bool crashed_ = false;
};

// The two nodes' ranks as one in-process group: node i's rank is global rank i. In-process
// communicators read CPU tensors in place and use their backend only to stage GPU tensors, so the
// group is made here with backends of its own rather than each node's.
class TwoNodeGroup {
 public:
  TwoNodeGroup() {
    for (int r = 0; r < 2; ++r) backends_.push_back(make_cpu_backend());
    comms_ = make_in_process_communicators({backends_[0].get(), backends_[1].get()});
  }
  // Node `node`'s communicator factory; crash_at > 0: its rank crashes in that collective.
  CommunicatorFactory node(int node, int crash_at = 0) {
    return [this, node, crash_at](const std::vector<Backend*>& local) {
      EXPECT_EQ(local.size(), 1u);
      std::vector<std::unique_ptr<Communicator>> out;
      out.push_back(std::move(comms_[size_t(node)]));
      if (crash_at > 0) out.back() = std::make_unique<CrashingCommunicator>(std::move(out.back()), crash_at);
      return out;
    };
  }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Node 1 on its own thread, node 0 here. Destroying the engine shuts node 1 down.
struct TwoNodes {
  explicit TwoNodes(int node0_crash_at = 0, int node1_crash_at = 0) {
    const int port = testing::random_port();
    node1 = std::async(std::launch::async, [this, port, node1_crash_at] {
      run_follower_node(node_options(1, port), group.node(1, node1_crash_at));
    });
    node0 = create_engine(node_options(0, port), group.node(0, node0_crash_at));
  }
  // Node 1's error, or "" when it shut down normally. Waits at most a minute.
  std::string node1_outcome() {
    if (node1.wait_for(std::chrono::seconds(60)) != std::future_status::ready) return "node 1 did not stop";
    try {
      node1.get();
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }

  TwoNodeGroup group;
  std::future<void> node1;
  std::unique_ptr<Engine> node0;
};

struct Requests {
  std::vector<std::unique_ptr<testing::EventCollector>> out;

  // Greedy continuations of every reference prompt of under 200 ids, all at once.
  explicit Requests(Engine& engine) {
    for (const auto& c : testing::reference_cases(kModel, 200)) {
      GenerationRequest r;
      r.prompt = c.ids;
      r.sampling.temperature = 0;
      r.sampling.max_tokens = int(c.greedy.size());
      r.sampling.ignore_eos = true;
      out.push_back(std::make_unique<testing::EventCollector>());
      auto id = engine.submit(std::move(r), out.back()->callback());
      EXPECT_TRUE(std::holds_alternative<RequestId>(id));
    }
    EXPECT_FALSE(out.empty());
    for (auto& c : out) c->wait(std::chrono::seconds(120));
  }
  std::vector<std::vector<int32_t>> ids() const {
    std::vector<std::vector<int32_t>> all;
    for (auto& c : out) {
      EXPECT_EQ(c->finished, FinishReason::Length) << c->error;
      all.push_back(c->ids);
    }
    return all;
  }
};

TEST(MultiHostEngine, TwoNodesGiveTheGreedyTokensOfOneRank) {
  std::vector<std::vector<int32_t>> expected;
  {
    auto one_rank = create_engine(options(1));
    expected = Requests(*one_rank).ids();
  }
  TwoNodes nodes;
  EXPECT_EQ(Requests(*nodes.node0).ids(), expected);
  nodes.node0.reset();  // a Shutdown message: node 1 returns normally
  EXPECT_EQ(nodes.node1_outcome(), "");
}

TEST(MultiHostEngine, FollowerCrashFailsNodeZerosRequestsWithItsError) {
  TwoNodes nodes(0, 40);  // node 1's rank dies in its 40th collective (the third step), node 0's waits there
  Requests requests(*nodes.node0);
  for (auto& r : requests.out) {
    EXPECT_EQ(r->finished, FinishReason::Error);
    EXPECT_NE(r->error.find("node 1 failed: simulated crash in collective 40"), std::string::npos) << r->error;
  }
  const std::string node1 = nodes.node1_outcome();
  EXPECT_EQ(node1, "simulated crash in collective 40");
  // The group stays broken: a later request fails at once with the first cause.
  testing::EventCollector later;
  auto id = nodes.node0->submit({{1, 2, 3}, {}}, later.callback());
  ASSERT_TRUE(std::holds_alternative<RequestId>(id));
  later.wait(std::chrono::seconds(30));
  EXPECT_EQ(later.finished, FinishReason::Error);
  EXPECT_NE(later.error.find("restart every node"), std::string::npos) << later.error;
}

TEST(MultiHostEngine, NodeZeroCrashEndsTheFollowerWithItsError) {
  TwoNodes nodes(40, 0);  // node 0's rank dies in its 40th collective, node 1's waits there
  Requests requests(*nodes.node0);
  for (auto& r : requests.out) {
    EXPECT_EQ(r->finished, FinishReason::Error);
    EXPECT_NE(r->error.find("simulated crash in collective 40"), std::string::npos) << r->error;
  }
  const std::string node1 = nodes.node1_outcome();
  EXPECT_NE(node1.find("node 0 at 127.0.0.1:"), std::string::npos) << node1;
  EXPECT_NE(node1.find("failed: simulated crash in collective 40"), std::string::npos) << node1;
}

TEST(MultiHostEngine, NodesWithDifferentFlagsRefuseToStart) {
  const int port = testing::random_port();
  TwoNodeGroup group;
  auto node1 = std::async(std::launch::async, [&] {
    EngineOptions o = node_options(1, port);
    o.max_num_batched_tokens = 128;
    run_follower_node(o, group.node(1));
  });
  try {
    create_engine(node_options(0, port), group.node(0));
    ADD_FAILURE() << "node 0 started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 has a step capacity (--max-num-batched-tokens) of 128, node 0 has 64"),
              std::string::npos)
        << e.what();
  }
  try {
    node1.get();
    ADD_FAILURE() << "node 1 started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed: node 1 has a step capacity"), std::string::npos) << e.what();
  }
}

TEST(MultiHostEngine, WrongNodeOrDeviceIsRefusedBeforeConnecting) {
  EngineOptions o = node_options(1, testing::random_port());
  try {
    create_engine(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the engine runs on node 0"), std::string::npos) << e.what();
  }
  o.node_rank = 0;  // CPU ranks, no injected communicators: nothing could join them across hosts
  try {
    create_engine(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("simulated CPU ranks cannot span hosts"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu
