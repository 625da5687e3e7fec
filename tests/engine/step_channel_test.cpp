// The step channel on localhost: steps reach the follower intact and in order, then the shutdown; a
// follower that goes away, or fails, while node 0's ranks wait for it in a collective releases them
// (their communicators are aborted) and fails the step with its reason; a failure on node 0 reaches
// the follower the same way; a node 0 that goes away ends the follower with an error.

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/step_channel.h"
#include "support/node_pair.h"

namespace dcu {
namespace {

using testing::connect_node_pair;
using testing::error_of;


// A rank's communicators, as far as the channel sees them: abort() releases a rank that waits in a
// collective, which then throws (as the real communicators do).
struct FakeCommunicators {
  std::mutex mutex;
  std::condition_variable cv;
  bool aborted = false;
  std::function<void()> abort() {
    return [this] {
      std::lock_guard lock(mutex);
      aborted = true;
      cv.notify_all();
    };
  }
  // A collective that waits for a rank that never comes: returns only through abort (or fails the test
  // after 20 s instead of hanging).
  void wait_in_collective() {
    std::unique_lock lock(mutex);
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return aborted; }))
      ADD_FAILURE() << "nobody aborted the communicators";
    throw Error("tensor-parallel group aborted: another rank failed");
  }
};

struct StepData {
  std::vector<std::vector<int32_t>> tokens{{5, 6, 7}, {9}, {11, 12}};
  std::vector<std::vector<int32_t>> tables{{0, 1}, {4, 2, 8}, {}};
  std::vector<SequenceStep> steps;
  StepData() {
    for (size_t i = 0; i < tokens.size(); ++i)
      steps.push_back({tokens[i], int(10 * i + 3), tables[i], int(i) + 1, i == 0});
  }
};

void expect_equal(std::span<const SequenceStep> got, std::span<const SequenceStep> want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::vector<int32_t>(got[i].tokens.begin(), got[i].tokens.end()),
              std::vector<int32_t>(want[i].tokens.begin(), want[i].tokens.end()));
    EXPECT_EQ(std::vector<int32_t>(got[i].block_table.begin(), got[i].block_table.end()),
              std::vector<int32_t>(want[i].block_table.begin(), want[i].block_table.end()));
    EXPECT_EQ(got[i].context_before, want[i].context_before);
    EXPECT_EQ(got[i].state_slot, want[i].state_slot);
    EXPECT_EQ(got[i].all_logits, want[i].all_logits);
  }
}

TEST(StepChannel, EncodedStepsDecodeToTheSameSequences) {
  StepData d;
  const std::vector<char> bytes = encode_steps(d.steps);
  ReceivedSteps decoded(bytes);
  ReceivedSteps moved = std::move(decoded);  // the spans still point at the moved token ids
  expect_equal(moved.steps(), d.steps);
  EXPECT_TRUE(ReceivedSteps(encode_steps({})).steps().empty());
}

TEST(StepChannel, MalformedStepMessagesAreRejected) {
  StepData d;
  std::vector<char> bytes = encode_steps(d.steps);
  std::vector<char> truncated(bytes.begin(), bytes.end() - 1);
  EXPECT_NE(error_of([&] { ReceivedSteps{truncated}; }).find("truncated"), std::string::npos);
  bytes.push_back(0);
  EXPECT_NE(error_of([&] { ReceivedSteps{bytes}; }).find("too many"), std::string::npos);
}

std::vector<NodeLink> one(NodeLink link) {
  std::vector<NodeLink> links;
  links.push_back(std::move(link));
  return links;
}

TEST(StepChannel, FollowerReceivesEveryStepThenTheShutdown) {
  auto [node0_end, node1_end] = connect_node_pair();
  StepData d;
  FakeCommunicators follower_comms;
  auto follower = std::async(std::launch::async, [&, link = std::move(node1_end)]() mutable {
    StepReceiver node0(std::move(link), follower_comms.abort());
    int steps = 0;
    while (auto step = node0.next()) {
      expect_equal(step->steps(), d.steps);
      ++steps;
    }
    return steps;
  });
  FakeCommunicators comms;
  {
    StepBroadcaster followers(one(std::move(node0_end)), comms.abort());
    int local_steps = 0;
    for (int i = 0; i < 3; ++i) followers.run_step(d.steps, [&] { ++local_steps; });
    EXPECT_EQ(local_steps, 3);
  }
  EXPECT_EQ(follower.get(), 3);
  EXPECT_FALSE(comms.aborted);
}

TEST(StepChannel, FollowerThatGoesAwayMidStepReleasesNodeZero) {
  auto [node0_end, node1_end] = connect_node_pair();
  StepData d;
  FakeCommunicators comms;
  StepBroadcaster followers(one(std::move(node0_end)), comms.abort());
  auto follower = std::async(std::launch::async, [link = std::move(node1_end)]() mutable {
    NodeLink node0 = std::move(link);
    node0.receive(MessageType::Step);  // then it dies without running the step
  });
  const std::string error = error_of([&] { followers.run_step(d.steps, [&] { comms.wait_in_collective(); }); });
  follower.get();
  EXPECT_NE(error.find("multi-host tensor parallelism stopped: node 1 closed the connection"), std::string::npos)
      << error;
  // Every later step fails at once, with the first cause, without running.
  bool ran = false;
  const std::string later = error_of([&] { followers.run_step(d.steps, [&] { ran = true; }); });
  EXPECT_FALSE(ran);
  EXPECT_NE(later.find("node 1 closed the connection"), std::string::npos) << later;
}

TEST(StepChannel, FollowerFailureReachesNodeZeroWithItsMessage) {
  auto [node0_end, node1_end] = connect_node_pair();
  StepData d;
  FakeCommunicators comms, follower_comms;
  StepBroadcaster followers(one(std::move(node0_end)), comms.abort());
  auto follower = std::async(std::launch::async, [&, link = std::move(node1_end)]() mutable {
    StepReceiver node0(std::move(link), follower_comms.abort());
    node0.next();
    node0.step_failed(Error("CUDA error: out of memory"));
  });
  const std::string error = error_of([&] { followers.run_step(d.steps, [&] { comms.wait_in_collective(); }); });
  EXPECT_NE(error.find("node 1 failed: CUDA error: out of memory"), std::string::npos) << error;
  EXPECT_EQ(error_of([&] { follower.get(); }), "CUDA error: out of memory");
}

TEST(StepChannel, NodeZeroFailureReleasesTheFollowerAndNamesTheCause) {
  auto [node0_end, node1_end] = connect_node_pair();
  StepData d;
  FakeCommunicators comms, follower_comms;
  auto follower = std::async(std::launch::async, [&, link = std::move(node1_end)]() mutable {
    StepReceiver node0(std::move(link), follower_comms.abort());
    auto step = node0.next();
    try {
      follower_comms.wait_in_collective();  // node 0's rank never arrives
    } catch (const Error& e) {
      node0.step_failed(e);
    }
  });
  StepBroadcaster followers(one(std::move(node0_end)), comms.abort());
  const std::string error =
      error_of([&] { followers.run_step(d.steps, [&] { throw Error("illegal memory access on GPU 0"); }); });
  EXPECT_NE(error.find("illegal memory access on GPU 0"), std::string::npos) << error;
  EXPECT_TRUE(comms.aborted);
  const std::string follower_error = error_of([&] { follower.get(); });
  EXPECT_NE(follower_error.find("node 0 at 127.0.0.1:"), std::string::npos) << follower_error;
  EXPECT_NE(follower_error.find("failed: illegal memory access on GPU 0"), std::string::npos) << follower_error;
}

TEST(StepChannel, NodeZeroThatGoesAwayEndsAnIdleFollower) {
  auto [node0_end, node1_end] = connect_node_pair();
  FakeCommunicators follower_comms;
  StepReceiver node0(std::move(node1_end), follower_comms.abort());
  { NodeLink gone = std::move(node0_end); }  // no shutdown message: node 0 crashed
  const std::string error = error_of([&] { node0.next(); });
  EXPECT_NE(error.find("closed the connection"), std::string::npos) << error;
}

}  // namespace
}  // namespace dcu
