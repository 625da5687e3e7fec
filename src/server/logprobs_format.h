#pragma once
// The two OpenAI logprobs shapes: completions ({tokens, token_logprobs, top_logprobs, text_offset}) and
// chat ({content: [{token, logprob, bytes, top_logprobs}]}).

#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/engine_api.h"
#include "server/model_text.h"

namespace dcu::server {

// How tokens are named: their text, or "token_id:N" (vLLM's return_tokens_as_token_ids).
struct TokenNames {
  const ModelText& text;
  bool as_ids = false;
  std::string operator()(int32_t id) const;
};

class CompletionLogprobs {
 public:
  explicit CompletionLogprobs(TokenNames names) : names_(names) {}
  // A prompt token without a logprob (the first one) or with one.
  void add_prompt_token(int32_t id, const std::optional<SampledToken>& logprob);
  void add(const SampledToken& token);
  nlohmann::ordered_json json() const;
  bool empty() const { return tokens_.empty(); }
  const TokenNames& names() const { return names_; }
  void clear();  // keeps the running text offset (streaming)

 private:
  void add_token(int32_t id, nlohmann::ordered_json top, nlohmann::ordered_json logprob = nullptr);

  TokenNames names_;
  nlohmann::ordered_json tokens_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json token_logprobs_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json top_logprobs_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json text_offset_ = nlohmann::ordered_json::array();
  size_t characters_ = 0;  // characters begun by the tokens so far (text_offset counts characters)
};

// Chat: one entry of "content" per sampled token.
nlohmann::ordered_json chat_logprob_entry(const TokenNames& names, const SampledToken& token, int top_logprobs);

// vLLM's prompt_logprobs: per prompt token null (the first) or {"<id>": {logprob, rank, decoded_token}}
// for the prompt token and the top k.
nlohmann::ordered_json prompt_logprobs_json(const TokenNames& names, const std::vector<std::optional<SampledToken>>& lps);

std::string token_string(const ModelText& text, int32_t id);

}  // namespace dcu::server
