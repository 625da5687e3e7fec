#include "engine/step_channel.h"

#include <cstring>

#include "core/log.h"

namespace dcu {
namespace {

// Fixed-width fields, native byte order (node_link.h).
struct SequenceHeader {
  int32_t context_before;
  int32_t state_slot;
  uint32_t all_logits;
  uint32_t num_tokens;
  uint32_t num_blocks;
};

template <typename T>
void append(std::vector<char>& out, const T* data, size_t count) {
  const size_t at = out.size(), n = count * sizeof(T);
  out.resize(at + n);
  if (n) std::memcpy(out.data() + at, data, n);
}

class Reader {
 public:
  explicit Reader(std::span<const char> bytes) : bytes_(bytes) {}
  template <typename T>
  void read(T* data, size_t count) {
    const size_t n = count * sizeof(T);
    if (n > bytes_.size() - pos_) fail("node 0 sent a truncated step message ({} bytes)", bytes_.size());
    if (n) std::memcpy(data, bytes_.data() + pos_, n);  // an empty list has no data pointer
    pos_ += n;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::span<const char> bytes_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<char> encode_steps(std::span<const SequenceStep> steps) {
  std::vector<char> out;
  const uint32_t count = uint32_t(steps.size());
  append(out, &count, 1);
  for (const SequenceStep& s : steps) {
    const SequenceHeader h{s.context_before, s.state_slot, s.all_logits ? 1u : 0u, uint32_t(s.tokens.size()),
                           uint32_t(s.block_table.size())};
    append(out, &h, 1);
    append(out, s.tokens.data(), s.tokens.size());
    append(out, s.block_table.data(), s.block_table.size());
  }
  return out;
}

ReceivedSteps::ReceivedSteps(std::span<const char> bytes) {
  Reader in(bytes);
  uint32_t count = 0;
  in.read(&count, 1);
  if (count > bytes.size()) fail("node 0 sent a malformed step message ({} sequences in {} bytes)", count, bytes.size());
  tokens_.resize(count);
  tables_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    SequenceHeader h{};
    in.read(&h, 1);
    if (h.num_tokens > bytes.size() || h.num_blocks > bytes.size())
      fail("node 0 sent a malformed step message (sequence {}: {} tokens, {} blocks)", i, h.num_tokens, h.num_blocks);
    tokens_[i].resize(h.num_tokens);
    tables_[i].resize(h.num_blocks);
    in.read(tokens_[i].data(), h.num_tokens);
    in.read(tables_[i].data(), h.num_blocks);
    steps_.push_back({tokens_[i], h.context_before, tables_[i], h.state_slot, h.all_logits != 0});
  }
  if (!in.done()) fail("node 0 sent a step message with {} bytes too many", bytes.size());
}

StepBroadcaster::StepBroadcaster(std::vector<NodeLink> followers, std::function<void()> abort_communicators)
    : followers_(std::move(followers)), abort_communicators_(std::move(abort_communicators)) {
  std::vector<NodeLink*> links;
  for (NodeLink& f : followers_) links.push_back(&f);
  watcher_ = std::make_unique<LinkWatcher>(links, LinkWatcher::Mode::ReadMessages,
                                           [this](const std::string& reason) { fail_group(reason, false); });
}

StepBroadcaster::~StepBroadcaster() {
  watcher_.reset();  // followers close their links once they have the Shutdown message: not a failure
  if (!failure_.empty()) return;
  for (NodeLink& f : followers_) {
    try {
      f.send(MessageType::Shutdown);
    } catch (const Error& e) {
      log::warn("shutting the multi-host group down: {}", e.what());
    }
  }
}

void StepBroadcaster::run_step(std::span<const SequenceStep> steps, const std::function<void()>& local) {
  throw_if_failed();
  const std::vector<char> bytes = encode_steps(steps);
  try {
    for (NodeLink& f : followers_) f.send(MessageType::Step, bytes);
    local();
  } catch (const Error& e) {
    // When the watcher aborted the communicators, the first cause is already recorded and kept.
    fail_group(e.what(), true);
  }
  // Also after a step that returned: collectives aborted half-way may have returned garbage.
  throw_if_failed();
}

void StepBroadcaster::fail_group(const std::string& reason, bool tell_followers) {
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;
    failure_ = reason;
  }
  log::error("multi-host tensor parallelism stopped: {}", reason);
  for (NodeLink& f : followers_) {
    if (tell_followers) f.send_failure(reason);  // only the stepping thread writes, so messages never interleave
    f.shut_down();
  }
  abort_communicators_();
}

void StepBroadcaster::throw_if_failed() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) fail("multi-host tensor parallelism stopped: {}; restart every node", failure_);
}

StepReceiver::StepReceiver(NodeLink node0, std::function<void()> abort_communicators)
    : node0_(std::move(node0)), abort_communicators_(std::move(abort_communicators)) {
  watcher_ = std::make_unique<LinkWatcher>(std::vector<NodeLink*>{&node0_}, LinkWatcher::Mode::ClosedOnly,
                                           [this](const std::string&) {
                                             {
                                               std::lock_guard lock(mutex_);
                                               node0_gone_ = true;
                                             }
                                             abort_communicators_();
                                           });
}

std::optional<ReceivedSteps> StepReceiver::next() {
  Message m = node0_.receive();  // throws node 0's failure, or that it went away
  if (m.type == MessageType::Shutdown) return std::nullopt;
  if (m.type != MessageType::Step) fail("{} sent a message of type {} during the steps", node0_.peer(), uint32_t(m.type));
  return ReceivedSteps(m.bytes);
}

void StepReceiver::step_failed(const Error& error) {
  bool gone;
  {
    std::lock_guard lock(mutex_);
    gone = node0_gone_;
  }
  // Node 0 closed the link: what it sent last (its failure), or that it closed, is the cause.
  if (gone) node0_.receive();
  node0_.send_failure(error.what());
  throw error;
}

}  // namespace dcu
