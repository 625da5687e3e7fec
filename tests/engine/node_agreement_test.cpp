// The setup exchanges of a multi-host group on localhost: settings that differ are refused on node 0
// with what differs (and the other node learns why); the cache shape comes from the smallest budget of
// all nodes and every node gets node 0's shape.

#include <future>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/node_agreement.h"
#include "support/node_pair.h"

namespace dcu {
namespace {

using testing::connect_node_pair;

std::vector<NodeLink> one(NodeLink link) {
  std::vector<NodeLink> links;
  links.push_back(std::move(link));
  return links;
}

NodeSettings settings() { return {2, 2048, 257, int32_t(DType::BF16), 27'000'000'000}; }

TEST(NodeAgreement, EqualSettingsAreAccepted) {
  auto nodes = connect_node_pair();  // not a structured binding: lambdas capture the ends (clang < 16)
  NodeLink& node0_end = nodes.node0_end;
  NodeLink& node1_end = nodes.node1_end;
  auto follower = std::async(std::launch::async, [&] { offer_settings(node1_end, settings()); });
  std::vector<NodeLink> followers = one(std::move(node0_end));
  check_follower_settings(followers, settings());
  follower.get();
}

TEST(NodeAgreement, DifferentSettingsAreRefusedNamingWhatDiffers) {
  struct Case {
    void (*change)(NodeSettings&);
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](NodeSettings& s) { s.tensor_parallel_size = 4; }, "node 1 has --tensor-parallel-size 4, node 0 has 2"},
      {[](NodeSettings& s) { s.max_tokens_per_step = 4096; }, "(--max-num-batched-tokens) of 4096, node 0 has 2048"},
      {[](NodeSettings& s) { s.max_logit_rows = 513; }, "(from --max-num-seqs) of 513, node 0 has 257"},
      {[](NodeSettings& s) { s.parameter_count = 9; }, "parameter count 9, node 0 has 27000000000"},
      {[](NodeSettings& s) { s.kv_dtype = int32_t(DType::F32); }, "node 1 keeps its KV cache in F32, node 0 in BF16"},
  };
  for (const Case& c : cases) {
    auto nodes = connect_node_pair();  // not a structured binding: lambdas capture the ends (clang < 16)
    NodeLink& node0_end = nodes.node0_end;
    NodeLink& node1_end = nodes.node1_end;
    NodeSettings theirs = settings();
    c.change(theirs);
    std::vector<NodeLink> followers = one(std::move(node0_end));
    auto follower = std::async(std::launch::async, [&] { offer_settings(node1_end, theirs); });
    std::string error;
    try {
      check_follower_settings(followers, settings());
    } catch (const Error& e) {
      error = e.what();
      followers[0].send_failure(error);  // what create_engine does with any setup error
    }
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    try {
      follower.get();
      ADD_FAILURE() << "the follower was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("failed: " + error), std::string::npos) << e.what();
    }
  }
}

TEST(NodeAgreement, CacheShapeComesFromTheSmallestBudgetOfAllNodes) {
  for (size_t follower_budget : {size_t(1) << 20, size_t(1) << 30}) {
    auto nodes = connect_node_pair();  // not a structured binding: lambdas capture the ends (clang < 16)
    NodeLink& node0_end = nodes.node0_end;
    NodeLink& node1_end = nodes.node1_end;
    auto follower = std::async(std::launch::async, [&] { return receive_cache_shape(node1_end, follower_budget); });
    std::vector<NodeLink> followers = one(std::move(node0_end));
    size_t planned_with = 0;
    const CacheShape shape = agree_cache_shape(followers, size_t(1) << 25, [&](size_t budget) {
      planned_with = budget;
      return CacheShape{int(budget >> 16), 16, 7, DType::F16};
    });
    EXPECT_EQ(planned_with, std::min(follower_budget, size_t(1) << 25));
    const CacheShape got = follower.get();
    EXPECT_EQ(got.num_blocks, shape.num_blocks);
    EXPECT_EQ(got.block_size, 16);
    EXPECT_EQ(got.num_state_slots, 7);
    EXPECT_EQ(got.kv_dtype, DType::F16);
  }
}

}  // namespace
}  // namespace dcu
