#pragma once
// The engine side of the server fuzzers: no thread and no model. Requests are queued by submit_all and
// answered when the fuzzer calls step(), each step giving every open request its next scripted token
// (or its end), so a whole HTTP exchange runs synchronously on the fuzzer's thread.

#include <cstdlib>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "engine/engine_api.h"
#include "server/generation_job.h"
#include "server/router.h"

namespace dcu::fuzz {

class ScriptedEngine : public Engine {
 public:
  ScriptedEngine(std::vector<int32_t> script, int vocab_size, int max_model_len = 4096)
      : script_(std::move(script)), vocab_size_(vocab_size), max_model_len_(max_model_len) {}

  std::variant<std::vector<RequestId>, SubmitError> submit_all(std::vector<GenerationRequest> requests,
                                                               std::vector<EventCallback> on_events) override {
    if (open_.size() + requests.size() > 64) return SubmitError{"the waiting queue is full", 1};
    std::vector<RequestId> ids;
    for (size_t i = 0; i < requests.size(); ++i) {
      open_[next_id_] = Open{std::move(requests[i]), std::move(on_events[i])};
      ids.push_back(next_id_++);
    }
    return ids;
  }
  void cancel(RequestId id) override {
    if (auto it = open_.find(id); it != open_.end()) it->second.cancelled = true;
  }
  EngineStats stats() const override { return {}; }
  int max_model_len() const override { return max_model_len_; }
  int vocab_size() const override { return vocab_size_; }

  // One step of every open request; false when none is open.
  bool step() {
    if (open_.empty()) return false;
    for (auto it = open_.begin(); it != open_.end();) {
      Open& r = it->second;
      GenerationEvent e;
      e.prompt_tokens = int(r.request.prompt.size());
      const auto& s = r.request.sampling;
      if (r.produced == 0 && s.prompt_logprobs >= 0)
        for (size_t i = 0; i < r.request.prompt.size(); ++i)
          e.prompt_logprobs.push_back(i == 0 ? std::nullopt : std::optional(token(r.request.prompt[i], s.prompt_logprobs)));
      if (r.cancelled) {
        e.finished = FinishReason::Abort;
      } else if (s.max_tokens == 0) {
        e.finished = FinishReason::Length;
      } else {
        const int32_t id = script_[r.produced++ % script_.size()];
        e.tokens.push_back(token(id, std::max(s.logprobs, 0)));
        if (r.produced >= s.max_tokens || r.produced >= kMaxTokens) e.finished = FinishReason::Length;
      }
      const bool done = e.finished.has_value();
      r.on_event(std::move(e));
      it = done ? open_.erase(it) : std::next(it);
    }
    return true;
  }

 private:
  static constexpr int kMaxTokens = 24;  // per request, whatever max_tokens says: keeps an input quick
  struct Open {
    GenerationRequest request;
    EventCallback on_event;
    int produced = 0;
    bool cancelled = false;
  };
  SampledToken token(int32_t id, int top) const {
    SampledToken t{id, -0.5f, {}, 1};
    for (int k = 0; k < top; ++k) t.top.push_back({int32_t((id + 1 + k) % vocab_size_), -1.0f - k});
    return t;
  }

  std::vector<int32_t> script_;
  int vocab_size_;
  int max_model_len_;
  std::map<RequestId, Open> open_;
  RequestId next_id_ = 1;
};

// What a client receives for one request.
struct Answer {
  int status = 0;
  std::string content_type;
  std::string body;
};

// Runs what the router answered to its end, as the transport would: a response as is, a generation job
// with its engine events, streamed or not.
inline Answer run_to_end(server::Router::Result result, ScriptedEngine& engine) {
  if (auto* r = std::get_if<server::HttpResponse>(&result)) return {r->status, r->content_type, r->body};
  auto job = std::get<std::shared_ptr<server::GenerationJob>>(std::move(result));
  std::deque<std::pair<int, GenerationEvent>> events;
  if (auto error = job->start([&](int index, GenerationEvent&& e) { events.emplace_back(index, std::move(e)); }))
    return {error->status, "application/json", server::error_body(*error)};
  std::string body;
  while (!job->done()) {
    if (events.empty() && !engine.step()) std::abort();  // the job waits for an event no request will send
    while (!events.empty()) {
      auto [index, event] = std::move(events.front());
      events.pop_front();
      body += job->on_event(index, std::move(event));
    }
  }
  if (job->streaming()) return {200, "text/event-stream", body + job->stream_tail()};
  const server::HttpResponse r = job->response();
  return {r.status, r.content_type, r.body};
}

// The checks every answer must pass: no 500 for anything a client sent, JSON where JSON is announced,
// SSE events of JSON ending in [DONE] for a stream.
inline void check_answer(const Answer& a) {
  if (a.status >= 500 && a.status != 503) std::abort();
  if (a.content_type == "application/json" && !a.body.empty() &&
      nlohmann::json::parse(a.body, nullptr, false).is_discarded())
    std::abort();
  if (a.content_type == "text/event-stream") {
    const std::string done = "data: [DONE]\n\n";
    if (a.body.size() < done.size() || a.body.compare(a.body.size() - done.size(), done.size(), done) != 0) std::abort();
    for (size_t pos = 0; pos < a.body.size() - done.size();) {
      const size_t end = a.body.find("\n\n", pos);
      if (a.body.compare(pos, 6, "data: ") != 0 || end == std::string::npos) std::abort();
      if (nlohmann::json::parse(a.body.substr(pos + 6, end - pos - 6), nullptr, false).is_discarded()) std::abort();
      pos = end + 2;
    }
  }
}

}  // namespace dcu::fuzz
