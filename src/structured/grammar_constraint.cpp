#include "structured/grammar_constraint.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace dcu::structured {
namespace {

constexpr std::string_view kThinkEnd = "</think>";

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const TokenGrammar> grammar, std::vector<int32_t> end_tokens,
                                     bool after_think)
    : grammar_(std::move(grammar)), end_tokens_(end_tokens), matcher_(grammar_, std::move(end_tokens)),
      open_(!after_think) {}

void GrammarConstraint::fill_mask(std::span<uint32_t> allowed) {
  if (!broken_) {
    matcher_.fill_mask(allowed);
    return;
  }
  std::memset(allowed.data(), 0, allowed.size_bytes());
  for (int32_t id : end_tokens_)
    if (id >= 0 && size_t(id) < allowed.size() * 32) allowed[size_t(id >> 5)] |= 1u << (id & 31);
}

void GrammarConstraint::accept(int32_t token) {
  history_.push_back({open_, broken_, tail_, false});
  if (open_) {
    history_.back().matched = !broken_ && matcher_.accept_token(token);
    if (!history_.back().matched && std::find(end_tokens_.begin(), end_tokens_.end(), token) == end_tokens_.end())
      broken_ = true;
    return;
  }
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (token >= 0 && token < vocab.size()) tail_ += vocab.bytes(token);
  if (tail_.find(kThinkEnd) != std::string::npos) {
    open_ = true;
    tail_.clear();
  } else if (tail_.size() > kThinkEnd.size()) {
    tail_.erase(0, tail_.size() - kThinkEnd.size());
  }
}

void GrammarConstraint::rollback(int tokens) {
  tokens = std::min(tokens, int(history_.size()));
  if (tokens <= 0) return;
  int matched = 0;
  for (size_t i = history_.size() - size_t(tokens); i < history_.size(); ++i) matched += history_[i].matched ? 1 : 0;
  matcher_.rollback(matched);
  const Step& first = history_[history_.size() - size_t(tokens)];
  open_ = first.open;
  tail_ = first.tail;
  broken_ = first.broken;
  history_.resize(history_.size() - size_t(tokens));
}

}  // namespace dcu::structured
