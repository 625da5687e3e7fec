#pragma once
// One HTTP generation request in flight: its engine requests (prompts x n), their detokenizers and stop
// strings, usage and metrics. The transport calls start() and cancel() on its own thread, forwards every
// engine event to on_event() on the request side, and writes what comes back. The completions and chat
// handlers derive from it and only format output.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_api.h"
#include "server/errors.h"
#include "server/http_types.h"
#include "server/metrics.h"
#include "server/model_text.h"

namespace dcu::server {

// Called on the engine thread with the index of the engine request in the job; must not block.
using JobEventSink = std::function<void(int index, GenerationEvent&& event)>;

class GenerationJob {
 public:
  struct Choice {
    int index = 0;          // OpenAI choice index
    int prompt_index = 0;   // which prompt it continues
    GenerationRequest request;
    RequestId engine_id = 0;
    bool submitted = false;
    std::unique_ptr<TextStream> stream;
    bool finished = false;
    std::string finish_reason;   // "stop" | "length" | "abort" | "error"
    std::string error;
    int generated = 0;           // completion tokens
    std::chrono::steady_clock::time_point last_token_time;
  };

  GenerationJob(Engine& engine, const ModelText& text, Metrics& metrics, bool streaming, bool include_usage);
  virtual ~GenerationJob() = default;

  bool streaming() const { return streaming_; }
  // Submits every engine request at once (the engine admits all of them or none) or returns the error.
  std::optional<ApiError> start(JobEventSink sink);
  // Request side. Streaming: the SSE bytes to send for this event (may be empty).
  std::string on_event(int index, GenerationEvent&& event);
  bool done() const { return unfinished_ == 0; }
  std::string stream_tail();   // streaming, after done(): the usage chunk if asked for, then [DONE]
  HttpResponse response();     // not streaming, after done()
  void cancel();               // client gone or shutdown

 protected:
  // `text` is the newly final text of choice `c`, `tokens` the tokens that produced it; `finished` is set
  // on the choice's last call. Streaming: return SSE bytes; otherwise accumulate.
  virtual std::string on_output(Choice& c, std::string text, std::span<const SampledToken> tokens,
                                const GenerationEvent& event) = 0;
  virtual nlohmann::ordered_json full_response() = 0;
  virtual nlohmann::ordered_json usage_chunk() = 0;  // a chunk with empty choices and "usage"
  nlohmann::ordered_json usage() const;

  void add_choice(int prompt_index, GenerationRequest request, std::unique_ptr<TextStream> stream);
  std::vector<Choice>& choices() { return choices_; }
  const ModelText& text() const { return text_; }
  void set_prompt_tokens(int prompt_index, int count);

  std::string id_;
  int64_t created_;

 private:
  Engine& engine_;
  const ModelText& text_;
  Metrics& metrics_;
  bool streaming_;
  bool include_usage_;
  std::vector<Choice> choices_;
  std::vector<int> prompt_tokens_;  // per prompt
  int unfinished_ = 0;
  std::chrono::steady_clock::time_point arrival_;
};

std::string random_id(const std::string& prefix);  // prefix + 32 hex digits

}  // namespace dcu::server
