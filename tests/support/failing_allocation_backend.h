#pragma once
// Test support: the CPU backend with allocation failures on demand, for the out-of-memory paths. The
// seam is Backend::allocate itself (virtual, documented to throw dcu::Error when out of memory), so no
// production code knows about it. Armed from the test thread, used from the engine thread: atomics.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace dcu::testing {

class FailingAllocationBackend : public CpuBackend {
 public:
  // The next `count` allocations fail.
  void fail_next(int count) { fail_next_.store(count); }
  // Every allocation of more than `bytes` fails (SIZE_MAX: none).
  void fail_above(size_t bytes) { fail_above_.store(bytes); }

  int failures() const { return failures_.load(); }  // allocations refused so far
  int live() const { return live_.load(); }          // allocations not released yet

  void* allocate(size_t bytes) override {
    int armed = fail_next_.load();
    while (armed > 0 && !fail_next_.compare_exchange_weak(armed, armed - 1)) {
    }
    if (armed > 0 || bytes > fail_above_.load()) {
      ++failures_;
      fail("out of host memory allocating {} bytes (injected by the test)", bytes);
    }
    ++live_;
    return CpuBackend::allocate(bytes);
  }
  void release(void* ptr) override {
    if (ptr) --live_;
    CpuBackend::release(ptr);
  }

 private:
  std::atomic<int> fail_next_{0};
  std::atomic<size_t> fail_above_{SIZE_MAX};
  std::atomic<int> failures_{0};
  std::atomic<int> live_{0};
};

}  // namespace dcu::testing
