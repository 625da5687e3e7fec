#include "comm/rank_threads.h"

namespace dcu {

RankThreads::RankThreads(int size, std::function<void(int rank)> thread_init) : thread_init_(std::move(thread_init)) {
  for (int r = 0; r < size; ++r) threads_.emplace_back([this, r] { work(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void RankThreads::run(const std::function<void(int rank)>& task, const std::function<void()>& on_failure) {
  std::unique_lock lock(mutex_);
  task_ = &task;
  on_failure_ = &on_failure;
  error_ = nullptr;
  running_ = size();
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [&] { return running_ == 0; });
  task_ = nullptr;
  on_failure_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void RankThreads::work(int rank) {
  if (thread_init_) thread_init_(rank);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    const std::function<void()>* on_failure;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
      on_failure = on_failure_;
    }
    try {
      (*task)(rank);
    } catch (...) {
      {
        std::lock_guard lock(mutex_);  // the root cause is recorded before the others fail from the abort
        if (!error_) error_ = std::current_exception();
      }
      if (*on_failure) (*on_failure)();
    }
    std::lock_guard lock(mutex_);
    if (--running_ == 0) done_.notify_all();
  }
}

}  // namespace dcu
