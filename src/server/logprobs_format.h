#pragma once
// The two OpenAI logprobs shapes: completions ({tokens, token_logprobs, top_logprobs, text_offset}) and
// chat ({content: [{token, logprob, bytes, top_logprobs}]}).

#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/engine_api.h"
#include "server/model_text.h"

namespace dcu::server {

class CompletionLogprobs {
 public:
  explicit CompletionLogprobs(const ModelText& text) : text_(text) {}
  // A prompt token without a logprob (the first one) or with one.
  void add_prompt_token(int32_t id, const std::optional<SampledToken>& logprob);
  void add(const SampledToken& token);
  nlohmann::ordered_json json() const;
  bool empty() const { return tokens_.empty(); }
  void clear();  // keeps the running text offset (streaming)

 private:
  const ModelText& text_;
  nlohmann::ordered_json tokens_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json token_logprobs_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json top_logprobs_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json text_offset_ = nlohmann::ordered_json::array();
  size_t offset_ = 0;
};

// Chat: one entry of "content" per sampled token.
nlohmann::ordered_json chat_logprob_entry(const ModelText& text, const SampledToken& token, int top_logprobs);

std::string token_string(const ModelText& text, int32_t id);

}  // namespace dcu::server
