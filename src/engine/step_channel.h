#pragma once
// The step channel of multi-host tensor parallelism: node 0 (the engine: scheduler, sampling) sends
// every model step's sequences to the other nodes over the node links, and each of them runs the
// step on its own ranks at the same time. docs/TENSOR_PARALLEL.md, "Multi-host".

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/link_watcher.h"
#include "comm/node_link.h"
#include "core/error.h"
#include "model/model_runner.h"

namespace dcu {

// The bytes of a Step message: per sequence its new tokens, context_before, block table, state slot
// and all_logits.
std::vector<char> encode_steps(std::span<const SequenceStep> steps);

// A decoded Step message: owns the token ids and block tables its SequenceSteps point into (moving
// keeps them in place; copying would not).
class ReceivedSteps {
 public:
  // Throws dcu::Error on malformed bytes.
  explicit ReceivedSteps(std::span<const char> bytes);
  ReceivedSteps(ReceivedSteps&&) = default;
  ReceivedSteps& operator=(ReceivedSteps&&) = default;
  std::span<const SequenceStep> steps() const { return steps_; }

 private:
  std::vector<std::vector<int32_t>> tokens_, tables_;
  std::vector<SequenceStep> steps_;
};

// Node 0's end. Any failure on any node ends the group: the other nodes are disconnected (told why when
// the failure is node 0's own), this node's communicators are aborted, and this step and every later
// one throws, naming the first cause. Node 0's server keeps answering, with that error.
class StepBroadcaster {
 public:
  // Watches the followers from now on: one that goes away aborts this node's communicators at once
  // (node 0's ranks may be waiting for its ranks in a collective).
  StepBroadcaster(std::vector<NodeLink> followers, std::function<void()> abort_communicators);
  ~StepBroadcaster();  // a Shutdown message to every follower, unless the group failed

  // Sends `steps` to every follower, then runs `local` (this node's ranks stepping the same sequences).
  void run_step(std::span<const SequenceStep> steps, const std::function<void()>& local);

 private:
  // Records the first failure, disconnects the followers and aborts this node's communicators.
  void fail_group(const std::string& reason, bool tell_followers);
  void throw_if_failed();

  std::vector<NodeLink> followers_;
  std::function<void()> abort_communicators_;
  std::mutex mutex_;
  std::string failure_;  // the first cause; empty while the group works
  std::unique_ptr<LinkWatcher> watcher_;  // declared last: stops before the links close
};

// The end of every other node: node 0's steps, in order.
class StepReceiver {
 public:
  // Watches node 0 from now on: when it goes away, abort_communicators() releases this node's ranks from
  // collectives that node 0's ranks will never join.
  StepReceiver(NodeLink node0, std::function<void()> abort_communicators);

  // The next step, or nullopt when node 0 shut the group down. Throws dcu::Error when node 0 failed or
  // went away.
  std::optional<ReceivedSteps> next();
  // This node's ranks failed a step. Throws the cause: node 0's failure when node 0 went away (which
  // released this node's ranks), else `error`, after telling node 0.
  [[noreturn]] void step_failed(const Error& error);

 private:
  NodeLink node0_;
  std::function<void()> abort_communicators_;
  std::mutex mutex_;
  bool node0_gone_ = false;
  std::unique_ptr<LinkWatcher> watcher_;  // declared last: stops before the link closes
};

}  // namespace dcu
