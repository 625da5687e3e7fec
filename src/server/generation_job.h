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
#include "server/openai_schema.h"
#include "server/server_context.h"

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
    nlohmann::ordered_json stop_reason;  // the stop string or stop token id that ended it (null for eos)
    std::string error;
    int generated = 0;           // completion tokens
    std::chrono::steady_clock::time_point last_token_time;
  };

  GenerationJob(const ServerContext& ctx, const CommonParams& params);
  virtual ~GenerationJob() = default;

  bool streaming() const { return params_.stream; }
  // Submits every engine request at once (the engine admits all of them or none) or returns the error.
  std::optional<ApiError> start(JobEventSink sink);
  // Request side. Streaming: the SSE bytes to send for this event (may be empty).
  std::string on_event(int index, GenerationEvent&& event);
  bool done() const { return unfinished_ == 0; }
  std::string stream_tail();   // streaming, after done(): the usage chunk if asked for, then [DONE]
  HttpResponse response();     // not streaming, after done()
  void cancel();               // client gone or shutdown: the unfinished choices end as aborted

 protected:
  // `text` is the newly final text of choice `c`, `tokens` the tokens that produced it; `finished` is set
  // on the choice's last call. Streaming: return SSE bytes; otherwise accumulate.
  virtual std::string on_output(Choice& c, std::string text, std::span<const SampledToken> tokens,
                                const GenerationEvent& event) = 0;
  virtual nlohmann::ordered_json full_response() = 0;
  virtual nlohmann::ordered_json usage_chunk() = 0;  // a chunk with empty choices and "usage"
  nlohmann::ordered_json usage() const;
  // A streamed chunk's "usage": this choice's so far with continuous_usage_stats, null with include_usage
  // (as OpenAI sends it), absent otherwise.
  void add_chunk_usage(nlohmann::ordered_json& chunk, const Choice& c) const;

  void add_choice(int prompt_index, GenerationRequest request, std::unique_ptr<TextStream> stream);
  std::vector<Choice>& choices() { return choices_; }
  const ModelText& text() const { return text_; }
  void set_prompt_tokens(int prompt_index, int count);
  bool return_tokens_as_token_ids() const { return params_.return_tokens_as_token_ids; }

  std::string id_;
  int64_t created_;

 private:
  // The text of this event's tokens (a stop token's own text left out, as vLLM does, unless
  // include_stop_str_in_output); ends the choice on a stop string.
  std::string take_text(Choice& c, const GenerationEvent& event, size_t& used);
  void finish_choice(Choice& c, FinishReason reason, std::chrono::steady_clock::time_point now);

  Engine& engine_;
  const ModelText& text_;
  Metrics& metrics_;
  CommonParams params_;
  std::vector<int32_t> eos_token_ids_;  // their stop_reason is null
  std::vector<Choice> choices_;
  std::vector<int> prompt_tokens_;  // per prompt
  int unfinished_ = 0;
  std::chrono::steady_clock::time_point arrival_;
};

std::string random_id(const std::string& prefix);  // prefix + 32 hex digits

}  // namespace dcu::server
