#include "sampling/mask_workers.h"

#include <algorithm>

namespace dcu {

MaskWorkers::MaskWorkers(int threads, std::function<void()> on_done) : on_done_(std::move(on_done)) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { run(); });
}

MaskWorkers::~MaskWorkers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

void MaskWorkers::submit(std::shared_ptr<PendingMask> mask, std::function<void(PendingMask&)> fill) {
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(std::move(mask), std::move(fill));
  }
  work_.notify_one();
}

void MaskWorkers::run() {
  for (;;) {
    std::shared_ptr<PendingMask> mask;
    std::function<void(PendingMask&)> fill;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      std::tie(mask, fill) = std::move(queue_.front());
      queue_.pop_front();
    }
    fill(*mask);
    {
      // on_done_ under the lock: once a waiter sees the mask done, no callback of it is still running
      // (the engine may end right after).
      std::lock_guard lock(mutex_);
      mask->done = true;
      if (on_done_) on_done_();
    }
    finished_.notify_all();
  }
}

bool MaskWorkers::wait_until(const PendingMask& mask, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return finished_.wait_until(lock, deadline, [&] { return mask.done; });
}

void MaskWorkers::wait(const PendingMask& mask) {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return mask.done; });
}

bool MaskWorkers::done(const PendingMask& mask) {
  std::lock_guard lock(mutex_);
  return mask.done;
}

}  // namespace dcu
