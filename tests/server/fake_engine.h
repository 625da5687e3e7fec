#pragma once
// Test doubles for the server tests only (never linked into dcuserve):
// - FakeEngine: answers every request from its own thread with a fixed script of token ids, one token
//   per step, honouring max_tokens, stop ids, logprobs and cancel(); can be paused and given a queue limit.
// - ByteText: a byte-level "tokenizer" (id = byte value, 256 = "<|im_end|>") with a trivial chat format.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "engine/engine_api.h"
#include "server/model_text.h"

namespace dcu::server::testing {

constexpr int32_t kImEnd = 256;

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(std::vector<int32_t> script, int max_model_len = 256,
                      std::chrono::milliseconds step = std::chrono::milliseconds(2))
      : script_(std::move(script)), max_model_len_(max_model_len), step_(step), thread_([this] { loop(); }) {}
  ~FakeEngine() override {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::variant<std::vector<RequestId>, SubmitError> submit_all(std::vector<GenerationRequest> requests,
                                                               std::vector<EventCallback> on_events) override {
    std::lock_guard lock(mutex_);
    if (max_waiting_ >= 0 && active_.size() + requests.size() > size_t(max_waiting_))
      return SubmitError{"the waiting queue is full", 3};
    std::vector<RequestId> ids;
    for (size_t i = 0; i < requests.size(); ++i) {
      RequestId id = next_id_++;
      submitted_.push_back(requests[i]);
      active_[id] = Active{std::move(requests[i]), std::move(on_events[i])};
      ids.push_back(id);
    }
    cv_.notify_all();
    return ids;
  }
  void cancel(RequestId id) override {
    std::lock_guard lock(mutex_);
    cancelled_.insert(id);
    if (auto it = active_.find(id); it != active_.end()) it->second.cancel = true;
    cv_.notify_all();
  }
  EngineStats stats() const override {
    std::lock_guard lock(mutex_);
    EngineStats s;
    s.running = paused_ ? 0 : int(active_.size());
    s.waiting = paused_ ? int(active_.size()) : 0;
    s.kv_cache_usage = 0.25;
    return s;
  }
  int max_model_len() const override { return max_model_len_; }
  int vocab_size() const override { return 257; }

  void set_paused(bool paused) {
    std::lock_guard lock(mutex_);
    paused_ = paused;
    cv_.notify_all();
  }
  void set_max_active(int n) {
    std::lock_guard lock(mutex_);
    max_waiting_ = n;
  }
  // Waits until `n` requests were cancelled; false on timeout.
  bool wait_cancelled(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return cancelled_.size() >= n; });
  }
  bool wait_submitted(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return submitted_.size() >= n; });
  }
  size_t cancelled_count() const {
    std::lock_guard lock(mutex_);
    return cancelled_.size();
  }
  size_t active_count() const {
    std::lock_guard lock(mutex_);
    return active_.size();
  }
  std::vector<GenerationRequest> submitted() const {
    std::lock_guard lock(mutex_);
    return submitted_;
  }

 private:
  struct Active {
    GenerationRequest request;
    EventCallback on_event;
    size_t produced = 0;
    bool cancel = false;
  };

  static SampledToken sampled(int32_t id, int top) {
    SampledToken t{id, -0.5f, {}};
    for (int k = 0; k < top; ++k) t.top.push_back({int32_t((id + 1 + k) % 256), -1.0f - k});
    return t;
  }

  GenerationEvent step(Active& a) {
    GenerationEvent e;
    const auto& s = a.request.sampling;
    e.prompt_tokens = int(a.request.prompt.size());
    if (a.produced == 0 && s.prompt_logprobs >= 0) {
      e.prompt_logprobs.emplace_back(std::nullopt);
      for (size_t i = 1; i < a.request.prompt.size(); ++i) e.prompt_logprobs.emplace_back(sampled(a.request.prompt[i], s.prompt_logprobs));
    }
    if (a.cancel) {
      e.finished = FinishReason::Abort;
      return e;
    }
    if (s.max_tokens == 0) {
      e.finished = FinishReason::Length;
      return e;
    }
    const int32_t id = script_[a.produced % script_.size()];
    ++a.produced;
    e.tokens.push_back(sampled(id, std::max(s.logprobs, 0)));
    const bool stop_id = std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), id) != s.stop_token_ids.end();
    if (stop_id && !s.ignore_eos && int(a.produced) > s.min_tokens) e.finished = FinishReason::Stop;
    else if (int(a.produced) >= s.max_tokens) e.finished = FinishReason::Length;
    return e;
  }

  void loop() {
    std::unique_lock lock(mutex_);
    while (!quit_) {
      if (paused_ || active_.empty()) {
        // Cancelled requests finish even while paused (the engine aborts waiting requests too).
        bool any_cancel = false;
        for (auto& [id, a] : active_) any_cancel |= a.cancel;
        if (!any_cancel) {
          cv_.wait_for(lock, step_);
          continue;
        }
      }
      std::vector<std::pair<EventCallback, GenerationEvent>> out;
      for (auto it = active_.begin(); it != active_.end();) {
        if (paused_ && !it->second.cancel) {
          ++it;
          continue;
        }
        GenerationEvent e = step(it->second);
        const bool done = e.finished.has_value();
        out.emplace_back(it->second.on_event, std::move(e));
        it = done ? active_.erase(it) : std::next(it);
      }
      lock.unlock();
      for (auto& [cb, e] : out) cb(std::move(e));
      std::this_thread::sleep_for(step_);
      lock.lock();
    }
  }

  std::vector<int32_t> script_;
  int max_model_len_;
  std::chrono::milliseconds step_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<RequestId, Active> active_;
  std::vector<GenerationRequest> submitted_;
  std::set<RequestId> cancelled_;
  RequestId next_id_ = 1;
  int max_waiting_ = -1;
  bool paused_ = false;
  bool quit_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

// Ids of a text, one per byte.
inline std::vector<int32_t> byte_ids(std::string_view s) { return {s.begin(), s.end()}; }

class ByteTextStream : public TextStream {
 public:
  ByteTextStream(bool skip_special, std::vector<std::string> stop) : skip_(skip_special), stop_(std::move(stop)) {}
  std::string push(int32_t id) override {
    if (stopped_) return {};
    if (id == kImEnd) {
      if (!skip_) held_ += "<|im_end|>";
    } else {
      held_ += char(id);
    }
    for (const auto& s : stop_)
      if (auto at = held_.find(s); at != std::string::npos) {
        stopped_ = true;
        stop_string_ = s;
        std::string out = held_.substr(0, at);
        held_.clear();
        return out;
      }
    // Hold back the longest tail that could still start a stop string.
    size_t keep = 0;
    for (const auto& s : stop_)
      for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k)
        if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
          keep = k;
          break;
        }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
  bool stopped() const override { return stopped_; }
  std::string stop_string() const override { return stop_string_; }
  std::string flush() override { return std::exchange(held_, {}); }

 private:
  bool skip_;
  std::vector<std::string> stop_;
  std::string held_;
  bool stopped_ = false;
  std::string stop_string_;
};

class PassThroughParser : public ChatOutputParser {
 public:
  ChatDelta feed(std::string_view text) override { return ChatDelta{std::string(text), {}, {}}; }
  ChatDelta finish() override { return {}; }
};

class ByteText : public ModelText {
 public:
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 10, "<|im_end|>") == 0) {
        ids.push_back(kImEnd);
        i += 9;
      } else {
        ids.push_back(static_cast<unsigned char>(text[i]));
      }
    }
    return ids;
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id == kImEnd) {
        if (!skip_special) s += "<|im_end|>";
      } else {
        s += char(id);
      }
    }
    return s;
  }
  std::string token_bytes(int32_t id) const override { return id == kImEnd ? "<|im_end|>" : std::string(1, char(id)); }
  int vocab_size() const override { return 257; }
  std::string render_chat(const ChatPrompt& p) const override {
    std::string s;
    for (const auto& m : p.messages) {
      if (m["role"] == "developer") throw Error("developer role refused by this template");
      s += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "<|im_end|>\n";
    }
    if (p.add_generation_prompt) s += "assistant: ";
    return s;
  }
  std::unique_ptr<TextStream> open_stream(bool skip_special, const std::vector<std::string>& stop) const override {
    return std::make_unique<ByteTextStream>(skip_special, stop);
  }
  std::unique_ptr<ChatOutputParser> open_chat_parser(const ChatParserOptions&) const override {
    return std::make_unique<PassThroughParser>();
  }
};

}  // namespace dcu::server::testing
