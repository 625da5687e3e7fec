#include "doctor/measure.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <mutex>

#include "comm/rank_threads.h"
#include "core/error.h"

namespace dcu::doctor {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One zeroed buffer of `bytes` per backend, released with this object.
class Buffers {
 public:
  Buffers(const std::vector<Backend*>& backends, size_t bytes) : backends_(backends) {
    try {
      for (Backend* b : backends_) {
        buffers_.push_back(b->allocate(bytes));
        b->fill_zero(buffers_.back(), bytes);
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~Buffers() { release(); }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  void* of(int rank) const { return buffers_[size_t(rank)]; }

 private:
  void release() {
    for (size_t i = 0; i < buffers_.size(); ++i) backends_[i]->release(buffers_[i]);
    buffers_.clear();
  }
  const std::vector<Backend*>& backends_;
  std::vector<void*> buffers_;
};

}  // namespace

double measure_copy_bandwidth(Backend& backend, size_t bytes) {
  const std::vector<Backend*> twice = {&backend, &backend};
  Buffers buffers(twice, bytes);
  void* a = buffers.of(0);
  void* b = buffers.of(1);
  backend.copy(b, a, bytes);  // warm-up
  constexpr int kCopies = 4;
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    backend.synchronize();
    const auto start = Clock::now();
    for (int i = 0; i < kCopies; ++i) backend.copy(i % 2 ? a : b, i % 2 ? b : a, bytes);
    backend.synchronize();
    best = std::min(best, seconds_since(start));
  }
  return 2.0 * double(bytes) * kCopies / best;  // each byte read once and written once
}

std::vector<AllReduceTiming> measure_all_reduce(const std::vector<Backend*>& backends,
                                                const std::vector<std::unique_ptr<Communicator>>& comms,
                                                const std::vector<size_t>& sizes, int iterations) {
  DCU_CHECK(backends.size() == comms.size() && !backends.empty());
  const int n = int(backends.size());
  RankThreads threads(n);
  std::vector<AllReduceTiming> out;
  for (size_t bytes : sizes) {
    Buffers buffers(backends, bytes);
    const int64_t count = int64_t(bytes / sizeof(float));
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      std::barrier start(n);
      std::mutex mutex;
      double slowest = 0;
      threads.run(
          [&](int r) {
            Backend& b = *backends[size_t(r)];
            const Tensor x(buffers.of(r), DType::F32, {count});
            try {
              comms[size_t(r)]->all_reduce_sum(x);  // warm-up (the first one also sets up NCCL's channels)
              b.synchronize();
            } catch (...) {
              start.arrive_and_drop();  // the others go on to collectives that the abort makes fail
              throw;
            }
            start.arrive_and_wait();
            const auto t0 = Clock::now();
            for (int i = 0; i < iterations; ++i) comms[size_t(r)]->all_reduce_sum(x);
            b.synchronize();
            const double s = seconds_since(t0);
            std::lock_guard lock(mutex);
            slowest = std::max(slowest, s);
          },
          [&] {
            for (const auto& c : comms) c->abort();
          });
      best = std::min(best, slowest / iterations);
    }
    out.push_back({bytes, best});
  }
  return out;
}

}  // namespace dcu::doctor
