#pragma once
// Test support: gathers one engine request's events and waits for its last one.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine_api.h"

namespace dcu::testing {

struct EventCollector {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<int32_t> ids;
  std::vector<std::optional<SampledToken>> prompt_logprobs;
  std::optional<FinishReason> finished;
  std::string error;

  EventCallback callback() {
    return [this](GenerationEvent&& ev) {
      std::lock_guard lock(mutex);
      for (const auto& t : ev.tokens) ids.push_back(t.id);
      if (!ev.prompt_logprobs.empty()) prompt_logprobs = ev.prompt_logprobs;
      if (ev.finished) finished = ev.finished, error = ev.error, cv.notify_all();
    };
  }
  void wait(std::chrono::seconds limit = std::chrono::seconds(300)) {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, limit, [&] { return finished.has_value(); })) << "request did not finish";
  }
};

}  // namespace dcu::testing
