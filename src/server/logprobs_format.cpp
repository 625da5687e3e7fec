#include "server/logprobs_format.h"

#include <cmath>

namespace dcu::server {

using ojson = nlohmann::ordered_json;

std::string token_string(const ModelText& text, int32_t id) { return text.decode(std::span<const int32_t>(&id, 1), false); }

namespace {
// vLLM reports -9999 for -inf (JSON has no infinity).
double finite(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }
}  // namespace

void CompletionLogprobs::add_prompt_token(int32_t id, const std::optional<SampledToken>& logprob) {
  if (logprob) return add(*logprob);
  const std::string s = token_string(text_, id);
  tokens_.push_back(s);
  token_logprobs_.push_back(nullptr);
  top_logprobs_.push_back(nullptr);
  text_offset_.push_back(offset_);
  offset_ += s.size();
}

void CompletionLogprobs::add(const SampledToken& token) {
  const std::string s = token_string(text_, token.id);
  tokens_.push_back(s);
  token_logprobs_.push_back(finite(token.logprob));
  ojson top = ojson::object();
  for (const auto& t : token.top) top[token_string(text_, t.id)] = finite(t.logprob);
  top[s] = finite(token.logprob);  // vLLM lists the sampled token among the top ones
  top_logprobs_.push_back(std::move(top));
  text_offset_.push_back(offset_);
  offset_ += s.size();
}

ojson CompletionLogprobs::json() const {
  return {{"text_offset", text_offset_}, {"token_logprobs", token_logprobs_}, {"tokens", tokens_},
          {"top_logprobs", top_logprobs_}};
}

void CompletionLogprobs::clear() {
  tokens_ = ojson::array();
  token_logprobs_ = ojson::array();
  top_logprobs_ = ojson::array();
  text_offset_ = ojson::array();
}

namespace {
ojson bytes_of(const ModelText& text, int32_t id) {
  ojson b = ojson::array();
  for (unsigned char ch : text.token_bytes(id)) b.push_back(int(ch));
  return b;
}
}  // namespace

ojson chat_logprob_entry(const ModelText& text, const SampledToken& token, int top_logprobs) {
  ojson top = ojson::array();
  for (size_t i = 0; i < token.top.size() && int(i) < top_logprobs; ++i)
    top.push_back({{"token", token_string(text, token.top[i].id)},
                   {"logprob", finite(token.top[i].logprob)},
                   {"bytes", bytes_of(text, token.top[i].id)}});
  return {{"token", token_string(text, token.id)},
          {"logprob", finite(token.logprob)},
          {"bytes", bytes_of(text, token.id)},
          {"top_logprobs", std::move(top)}};
}

}  // namespace dcu::server
