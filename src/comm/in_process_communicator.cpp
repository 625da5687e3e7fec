#include "comm/in_process_communicator.h"

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>

#include "core/error.h"

namespace dcu {
namespace {

// What the ranks share: a barrier (that can be aborted), each rank's published host buffer, and the
// reduced result.
class Group {
  int size_;

 public:
  explicit Group(int size) : size_(size), published_(size_t(size)) {}
  int size() const { return size_; }

  // Waits for every rank. The last to arrive runs `completion` before releasing the others.
  void arrive_and_wait(const std::function<void()>& completion = {}) {
    std::unique_lock lock(mutex_);
    if (aborted_) fail("tensor-parallel group aborted: another rank failed");
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      if (completion) completion();
      arrived_ = 0;
      ++generation_;
      wake_.notify_all();
      return;
    }
    wake_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) fail("tensor-parallel group aborted: another rank failed");
  }
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    wake_.notify_all();
  }

  std::vector<const float*> published_;  // host view of each rank's input for the current collective
  std::vector<float> result;             // all-reduce result, written in per-rank chunks

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank, Backend& backend)
      : group_(std::move(group)), rank_(rank), backend_(backend), on_host_(backend.kind() == DeviceKind::Cpu) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string name() const override { return "in-process"; }

  void all_reduce_sum(Tensor x) override {
    DCU_CHECK(x.dtype == DType::F32);
    const size_t n = size_t(x.numel());
    Group& g = *group_;
    g.published_[size_t(rank_)] = host_input(x.data, n);
    g.arrive_and_wait([&] { g.result.resize(n); });
    // Each rank sums its chunk over all ranks, always in rank order: every rank gets the same bits.
    const int P = g.size();
    const size_t begin = n * size_t(rank_) / size_t(P), end = n * size_t(rank_ + 1) / size_t(P);
    for (size_t i = begin; i < end; ++i) {
      float s = g.published_[0][i];
      for (int r = 1; r < P; ++r) s += g.published_[size_t(r)][i];
      g.result[i] = s;
    }
    g.arrive_and_wait();
    // Nobody reads the inputs any more; the result stays untouched until every rank has left (the next
    // collective's first barrier).
    if (on_host_) std::memcpy(x.data, g.result.data(), n * sizeof(float));
    else backend_.upload(x.data, g.result.data(), n * sizeof(float));
  }

  void all_gather(const Tensor& local, Tensor out) override {
    DCU_CHECK(local.dtype == DType::F32 && out.dtype == DType::F32);
    const size_t n = size_t(local.numel());
    Group& g = *group_;
    const int P = g.size();
    DCU_CHECK(size_t(out.numel()) >= n * size_t(P));
    g.published_[size_t(rank_)] = host_input(local.data, n);
    g.arrive_and_wait();
    if (on_host_) {
      for (int r = 0; r < P; ++r)
        std::memcpy(out.as<float>() + size_t(r) * n, g.published_[size_t(r)], n * sizeof(float));
    } else {
      gathered_.resize(n * size_t(P));
      for (int r = 0; r < P; ++r)
        std::memcpy(gathered_.data() + size_t(r) * n, g.published_[size_t(r)], n * sizeof(float));
    }
    g.arrive_and_wait();  // the inputs may change once every rank has copied them
    if (!on_host_) backend_.upload(out.data, gathered_.data(), gathered_.size() * sizeof(float));
  }

  void abort() override { group_->abort(); }

 private:
  // This rank's input as host memory: in place on the CPU, else a staged copy.
  const float* host_input(const void* data, size_t n) {
    if (on_host_) return static_cast<const float*>(data);
    staging_.resize(n);
    backend_.download(staging_.data(), data, n * sizeof(float));
    return staging_.data();
  }

  std::shared_ptr<Group> group_;
  int rank_;
  Backend& backend_;
  bool on_host_;
  std::vector<float> staging_, gathered_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_in_process_communicators(const std::vector<Backend*>& backends) {
  auto group = std::make_shared<Group>(int(backends.size()));
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t r = 0; r < backends.size(); ++r)
    out.push_back(std::make_unique<InProcessCommunicator>(group, int(r), *backends[r]));
  return out;
}

}  // namespace dcu
