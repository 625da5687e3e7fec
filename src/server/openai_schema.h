#pragma once
// OpenAI (vLLM-flavoured) request bodies parsed and validated into typed structs. Every parse_*
// function throws ApiException (400, with `param` naming the field) on anything malformed; unknown
// fields are ignored, as vLLM does.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_api.h"
#include "server/constraint_fields.h"
#include "server/server_config.h"

namespace dcu::server {

// Fields shared by /v1/completions and /v1/chat/completions.
struct CommonParams {
  std::optional<std::string> model;
  int n = 1;
  std::optional<int> max_tokens;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats: usage in every chunk
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<float> repetition_penalty;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  int min_tokens = 0;
  bool skip_special_tokens = true;
  bool include_stop_str_in_output = false;  // the stop string (or stop token's text) stays in the text
  std::optional<int> truncate_prompt_tokens;  // keep the last k prompt tokens; -1: up to max_model_len
  bool return_tokens_as_token_ids = false;    // logprobs name tokens "token_id:N"
  std::optional<int> prompt_logprobs;         // logprobs of every prompt token plus the top k
  std::optional<RequestConstraint> constraint;  // structured output asked for by the request
};

using PromptInput = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest {
  CommonParams common;
  std::vector<PromptInput> prompts;  // one or more
  bool echo = false;
  std::optional<int> logprobs;       // top-k count; 0 = only the sampled token
};

struct ToolChoice {
  enum class Kind { None, Auto, Required, Named } kind = Kind::None;
  std::string function_name;  // Named
};

struct ChatRequest {
  CommonParams common;
  nlohmann::ordered_json messages;  // validated; content normalised to strings, tool-call arguments to objects
  nlohmann::ordered_json tools;     // null or the validated array
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;  // false: at most one call is returned
  bool logprobs = false;
  int top_logprobs = 0;
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
};

struct TokenizeRequest {
  std::optional<std::string> model;
  std::optional<std::string> prompt;       // either prompt ...
  std::optional<ChatRequest> chat;         // ... or messages
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::optional<std::string> model;
  std::vector<int32_t> tokens;
};

// Parses a body as a JSON object (400 on malformed JSON, a non-object, or nesting deeper than
// `max_depth`: the later recursive walks, dump and the chat template, must not run out of stack).
nlohmann::ordered_json parse_json_body(std::string_view body, int max_depth = kDefaultMaxJsonDepth);

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, int max_logprobs);
ChatRequest parse_chat_request(const nlohmann::ordered_json& body, int max_logprobs);
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body);
DetokenizeRequest parse_detokenize_request(const nlohmann::ordered_json& body);

// The engine's sampling parameters for one request: request fields, else the model's defaults, else
// vLLM's. max_tokens is left for the caller (it depends on the prompt length).
SamplingParams make_sampling_params(const CommonParams& p, const GenerationDefaults& defaults);

// Applies truncate_prompt_tokens (vLLM: keeps the last k tokens); a k beyond the context length is a 400.
void truncate_prompt(std::vector<int32_t>& ids, const CommonParams& p, int max_model_len);

// max_tokens for a prompt of `prompt_tokens`: the request's, else the rest of the context capped by the
// model's max_new_tokens; never above --max-tokens-cap. Throws the vLLM-worded 400 when it cannot fit,
// and a 400 for a request that asks more than the cap.
int resolve_max_tokens(const CommonParams& p, const ServerConfig& config, int prompt_tokens, int max_model_len,
                       bool allow_zero);

}  // namespace dcu::server
