#include "server/logprobs_format.h"

#include <cmath>

namespace dcu::server {

using ojson = nlohmann::ordered_json;

std::string token_string(const ModelText& text, int32_t id) { return text.decode(std::span<const int32_t>(&id, 1), false); }

namespace {
// vLLM reports -9999 for -inf (JSON has no infinity).
double finite(float logprob) { return std::isfinite(logprob) ? logprob : -9999.0; }
}  // namespace

std::string TokenNames::operator()(int32_t id) const {
  return as_ids ? "token_id:" + std::to_string(id) : token_string(text, id);
}

namespace {
bool utf8_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }
}  // namespace

void CompletionLogprobs::add_prompt_token(int32_t id, const std::optional<SampledToken>& logprob) {
  if (logprob) return add(*logprob);
  add_token(id, nullptr);
}

void CompletionLogprobs::add(const SampledToken& token) {
  ojson top = ojson::object();
  for (const auto& t : token.top) top[names_(t.id)] = finite(t.logprob);
  top[names_(token.id)] = finite(token.logprob);  // vLLM lists the sampled token among the top ones
  add_token(token.id, std::move(top), finite(token.logprob));
}

// text_offset is the index (in characters, as Python counts them) of the character the token's first
// byte belongs to, so it stays inside the returned text when tokens split a UTF-8 character.
void CompletionLogprobs::add_token(int32_t id, ojson top, ojson logprob) {
  const std::string bytes = names_.text.token_bytes(id);
  const bool starts_inside = !bytes.empty() && utf8_continuation(bytes[0]) && characters_ > 0;
  text_offset_.push_back(characters_ - (starts_inside ? 1 : 0));
  for (unsigned char b : bytes) characters_ += utf8_continuation(b) ? 0 : 1;
  tokens_.push_back(names_(id));
  token_logprobs_.push_back(std::move(logprob));
  top_logprobs_.push_back(std::move(top));
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

ojson chat_logprob_entry(const TokenNames& names, const SampledToken& token, int top_logprobs) {
  ojson top = ojson::array();
  for (size_t i = 0; i < token.top.size() && int(i) < top_logprobs; ++i)
    top.push_back({{"token", names(token.top[i].id)},
                   {"logprob", finite(token.top[i].logprob)},
                   {"bytes", bytes_of(names.text, token.top[i].id)}});
  return {{"token", names(token.id)},
          {"logprob", finite(token.logprob)},
          {"bytes", bytes_of(names.text, token.id)},
          {"top_logprobs", std::move(top)}};
}

ojson prompt_logprobs_json(const TokenNames& names, const std::vector<std::optional<SampledToken>>& lps) {
  ojson out = ojson::array();
  for (const auto& lp : lps) {
    if (!lp) {
      out.push_back(nullptr);
      continue;
    }
    auto entry = [&](int32_t id, float logprob, int rank) {
      return ojson{{"logprob", finite(logprob)}, {"rank", rank}, {"decoded_token", names(id)}};
    };
    ojson position = ojson::object();
    position[std::to_string(lp->id)] = entry(lp->id, lp->logprob, lp->rank);
    for (size_t i = 0; i < lp->top.size(); ++i)
      position[std::to_string(lp->top[i].id)] = entry(lp->top[i].id, lp->top[i].logprob, int(i) + 1);
    out.push_back(std::move(position));
  }
  return out;
}

}  // namespace dcu::server
