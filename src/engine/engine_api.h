#pragma once
// What the request side (HTTP server, CLI) and the engine exchange. Plain data plus one interface; the
// engine thread does no string work, so everything here is token ids and numbers.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sampling/token_constraint.h"

namespace dcu {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  float top_p = 1.0f;               // (0, 1]
  int top_k = -1;                   // -1 or 0 = all
  float min_p = 0.0f;               // [0, 1]
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]
  float repetition_penalty = 1.0f;  // > 0
  std::optional<uint64_t> seed;     // reproducible sampling when set
  int max_tokens = 16;              // new tokens to generate, >= 1 (or 0 with prompt logprobs only)
  int min_tokens = 0;               // eos/stop ids are ignored before this many tokens
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // finish (reason "stop") on any of these, in addition to eos
  int logprobs = -1;                // -1: none; k >= 0: the sampled token's logprob plus the top k
  int prompt_logprobs = -1;         // -1: none; k >= 0: logprobs of every prompt token plus the top k
  std::shared_ptr<TokenConstraint> constraint;  // structured output: this sequence's own; null: none
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, non-empty
  SamplingParams sampling;
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;              // valid when logprobs were requested
  std::vector<TokenLogprob> top;     // the top k alternatives, most likely first
  int rank = 0;                      // prompt logprobs: 1 + the number of more likely tokens; else 0
};

enum class FinishReason { Stop, Length, Abort, Error };

// One batch of progress of one request, delivered in order. The first event of a request with
// prompt_logprobs carries them (entry 0, the first prompt token, has no logprob: nullopt).
struct GenerationEvent {
  std::vector<SampledToken> tokens;
  std::vector<std::optional<SampledToken>> prompt_logprobs;
  std::optional<FinishReason> finished;  // set on the last event only
  std::string error;                     // set when finished == Error
  int prompt_tokens = 0;                 // filled on the last event (usage)
  int cached_tokens = 0;
};

using RequestId = uint64_t;
// Called on the engine thread: must be quick and must not call back into the engine.
using EventCallback = std::function<void(GenerationEvent&&)>;

struct EngineStats {
  int running = 0;
  int waiting = 0;
  double kv_cache_usage = 0.0;      // fraction of KV blocks in use
  double state_slot_usage = 0.0;    // fraction of GDN state slots in use
  uint64_t preemptions = 0;
  // Speculative decoding, as vLLM counts it: verify steps of a sequence with drafts, drafted tokens,
  // accepted tokens, and accepted tokens by draft position (k entries; empty when speculation is off).
  uint64_t spec_drafts = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
  std::vector<uint64_t> spec_accepted_per_position;
};

// Rejection at submit time; `retry_after_seconds` > 0 means "try later" (HTTP 503).
struct SubmitError {
  std::string message;
  int retry_after_seconds = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Queues requests all together or none of them (a multi-sequence HTTP request is admitted whole, so
  // two such requests cannot each take part of the queue and both be refused); `on_events[i]` receives
  // the events of `requests[i]`. Returns their ids in order, or a SubmitError when the waiting queue
  // has no room for all of them (retry later) or one of them can never run (prompt beyond the
  // context length, more requests than the queue holds). Thread-safe.
  virtual std::variant<std::vector<RequestId>, SubmitError> submit_all(std::vector<GenerationRequest> requests,
                                                                       std::vector<EventCallback> on_events) = 0;
  // One request: submit_all of one.
  std::variant<RequestId, SubmitError> submit(GenerationRequest request, EventCallback on_event) {
    std::vector<GenerationRequest> requests;
    requests.push_back(std::move(request));
    std::vector<EventCallback> on_events;
    on_events.push_back(std::move(on_event));
    auto result = submit_all(std::move(requests), std::move(on_events));
    if (auto* error = std::get_if<SubmitError>(&result)) return std::move(*error);
    return std::get<std::vector<RequestId>>(result).front();
  }
  // Aborts a request (client gone, stop string seen). Its last event has FinishReason::Abort unless it
  // had already finished. Thread-safe; unknown ids are ignored.
  virtual void cancel(RequestId id) = 0;
  virtual EngineStats stats() const = 0;
  virtual int max_model_len() const = 0;
  virtual int vocab_size() const = 0;
};

}  // namespace dcu
