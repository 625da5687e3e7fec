#pragma once
// One worker thread per tensor-parallel rank. run() hands every rank the same task and waits for all
// of them; the threads live as long as this object, so a step costs two wake-ups, not thread starts.

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dcu {

class RankThreads {
 public:
  // `thread_init(rank)` runs once on each worker thread before its first task (e.g. to size OpenMP).
  explicit RankThreads(int size, std::function<void(int rank)> thread_init = {});
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return int(threads_.size()); }

  // Runs task(rank) on every rank's thread and returns when all have finished. When a task throws,
  // `on_failure` runs at once (to release ranks waiting for it in a collective) and the first
  // exception is rethrown here after every rank has returned.
  void run(const std::function<void(int rank)>& task, const std::function<void()>& on_failure = {});

 private:
  void work(int rank);

  std::vector<std::thread> threads_;
  std::function<void(int)> thread_init_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* task_ = nullptr;
  const std::function<void()>* on_failure_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

}  // namespace dcu
