#pragma once
// Threads that fill structured-output masks beside the engine thread. A task's result is a
// PendingMask the engine can wait for with a deadline, so a mask that overruns its budget can be
// left to finish while the rest of the batch moves on (BatchSampler, LlmEngine).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dcu {

// One row's mask: the allowed bits [ceil(V / 32)] and the bans that stay (Sampler::fill_constraint_mask).
struct PendingMask {
  std::vector<uint32_t> allowed;
  std::vector<int32_t> banned;     // the job's bans, owned: the task may outlive the step
  std::vector<int32_t> kept_bans;  // what fill_constraint_mask kept of them
  bool done = false;               // under the workers' mutex
};

class MaskWorkers {
 public:
  // `threads` workers (at least one); `on_done` runs on the worker after every finished task, under
  // the workers' lock (it must not call back into them).
  explicit MaskWorkers(int threads, std::function<void()> on_done = {});
  ~MaskWorkers();  // runs the queued tasks first (the engine has waited for all of them by then)
  MaskWorkers(const MaskWorkers&) = delete;
  MaskWorkers& operator=(const MaskWorkers&) = delete;

  // Runs fill(mask) on a worker; mask->done is set after it returns.
  void submit(std::shared_ptr<PendingMask> mask, std::function<void(PendingMask&)> fill);
  // Whether the mask is done by `deadline` (waits until then at most).
  bool wait_until(const PendingMask& mask, std::chrono::steady_clock::time_point deadline);
  void wait(const PendingMask& mask);
  bool done(const PendingMask& mask);

 private:
  void run();

  std::function<void()> on_done_;
  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<std::pair<std::shared_ptr<PendingMask>, std::function<void(PendingMask&)>>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dcu
