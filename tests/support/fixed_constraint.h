#pragma once
// A structured-output constraint for sampling tests: allows a fixed set of tokens at every step and
// records the tokens it is told were chosen.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "sampling/token_constraint.h"

namespace dcu::test {

class FixedConstraint : public TokenConstraint {
 public:
  explicit FixedConstraint(std::vector<int32_t> allowed) : allowed_(std::move(allowed)) {}
  bool active() const override { return true; }
  void fill_mask(std::span<uint32_t> mask) override {
    std::fill(mask.begin(), mask.end(), 0u);
    for (int32_t id : allowed_) mask[size_t(id >> 5)] |= 1u << (id & 31);
  }
  void accept(int32_t token) override { accepted.push_back(token); }
  void rollback(int) override {}
  std::vector<int32_t> accepted;

 private:
  std::vector<int32_t> allowed_;
};

// A FixedConstraint whose masks after the first `free_masks` wait until open() (a mask that overruns
// any budget, for as long as a test wants).
class GatedConstraint : public FixedConstraint {
 public:
  explicit GatedConstraint(std::vector<int32_t> allowed, int free_masks = 0)
      : FixedConstraint(std::move(allowed)), free_masks_(free_masks) {}
  void fill_mask(std::span<uint32_t> mask) override {
    std::unique_lock lock(mutex_);
    if (masks_++ >= free_masks_) opened_.wait(lock, [&] { return open_; });
    FixedConstraint::fill_mask(mask);
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }

 private:
  const int free_masks_;
  int masks_ = 0;
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

}  // namespace dcu::test
