#include "structured/grammar_matcher.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace dcu::structured {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar, std::vector<int32_t> end_tokens)
    : grammar_(std::move(grammar)), end_tokens_(std::move(end_tokens)), parser_(grammar_->grammar()) {}

bool GrammarMatcher::is_end_token(int32_t id) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), id) != end_tokens_.end();
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  const size_t before = parser_.sets();
  for (char c : bytes)
    if (!parser_.scan(uint8_t(c))) {
      parser_.truncate(before);
      return false;
    }
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const Step step{parser_.sets(), terminated_};
  if (is_end_token(id)) {
    if (!can_end()) return false;
    terminated_ = true;
  } else {
    if (terminated_ || id < 0 || id >= grammar_->vocabulary().size()) return false;
    const std::string& bytes = grammar_->vocabulary().bytes(id);
    if (bytes.empty() || !accept_bytes(bytes)) return false;
  }
  history_.push_back(step);
  return true;
}

void GrammarMatcher::rollback(int tokens) {
  DCU_CHECK(tokens >= 0 && tokens <= int(history_.size()));
  if (tokens == 0) return;
  const Step& step = history_[history_.size() - size_t(tokens)];
  parser_.truncate(step.parser_sets);
  terminated_ = step.terminated;
  history_.resize(history_.size() - size_t(tokens));
}

void GrammarMatcher::mark(size_t node, std::span<uint32_t> mask) const {
  for (int32_t id : grammar_->vocabulary().tokens(node)) mask[size_t(id >> 5)] |= 1u << (id & 31);
}

// The Earley walk of the trie below `node` (the parser's last set is that node's prefix), switching
// to the byte-only walk wherever the set shrinks to one pure item.
void GrammarMatcher::walk_children(size_t node, std::span<uint32_t> mask) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  const CompiledGrammar& g = grammar_->grammar();
  const size_t end = vocab.subtree_end(node);
  for (size_t child = node + 1; child < end; child = vocab.subtree_end(child)) {
    if (!parser_.scan(vocab.byte(child))) continue;
    mark(child, mask);
    if (auto item = parser_.single_pure()) {
      std::vector<CompiledGrammar::Transitions> stack;  // own stack: exits recurse into walk_children
      walk_pure(
          g, vocab, child, item->state, stack, [&](size_t n) { mark(n, mask); },
          [&](size_t n, int32_t state) {
            parser_.push_item({state, item->origin});
            walk_children(n, mask);
            parser_.pop();
          });
    } else {
      walk_children(child, mask);
    }
    parser_.pop();
  }
}

void GrammarMatcher::fill_mask(std::span<uint32_t> mask) {
  DCU_CHECK(mask.size() * 32 >= size_t(grammar_->vocabulary().size()));
  std::memset(mask.data(), 0, mask.size_bytes());
  if (!terminated_) {
    if (auto item = parser_.single_pure()) {
      // From the trie's root the pure walk depends on the state alone: cached in the TokenGrammar.
      auto walk = grammar_->pure_walk(item->state);
      walk->accepted.write(mask);
      for (const auto& [node, state] : walk->exits) {
        parser_.push_item({state, item->origin});
        walk_children(size_t(node), mask);
        parser_.pop();
      }
    } else {
      walk_children(0, mask);
    }
  }
  if (can_end())
    for (int32_t id : end_tokens_)
      if (id >= 0 && size_t(id) < mask.size() * 32) mask[size_t(id >> 5)] |= 1u << (id & 31);
}

}  // namespace dcu::structured
