#pragma once
// The state of one output under a grammar: accepts tokens, fills the mask of tokens that may come
// next, and takes tokens back (speculative decoding). End tokens (eos, stop ids) are allowed only
// where the grammar may end, and are the only tokens allowed once it cannot go on.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "structured/earley_parser.h"
#include "structured/token_grammar.h"

namespace dcu::structured {

class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<const TokenGrammar> grammar, std::vector<int32_t> end_tokens);

  // False (and nothing changes) when the token may not come next.
  bool accept_token(int32_t id);
  // Bytes outside any token (tests, and checking a finished output); false leaves the state as it was.
  bool accept_bytes(std::string_view bytes);
  // Takes back the last `tokens` accepted tokens (at most as many as were accepted).
  void rollback(int tokens);
  int accepted_tokens() const { return int(history_.size()); }

  // mask: ceil(V / 32) words for a logits row of V >= vocabulary size; bit id%32 of word id/32
  // set when token id may come next.
  void fill_mask(std::span<uint32_t> mask);

  bool can_end() const { return terminated_ || parser_.can_end(); }
  bool terminated() const { return terminated_; }  // an end token was accepted
  // Nothing but an end token may follow.
  bool finished() const { return terminated_ || !parser_.can_continue(); }

 private:
  bool is_end_token(int32_t id) const;
  void walk_children(size_t node, std::span<uint32_t> mask);
  void mark(size_t node, std::span<uint32_t> mask) const;

  struct Step {
    size_t parser_sets;   // the parser's sets before the token
    bool terminated;
  };

  std::shared_ptr<const TokenGrammar> grammar_;
  std::vector<int32_t> end_tokens_;
  EarleyParser parser_;
  std::vector<Step> history_;
  bool terminated_ = false;
};

}  // namespace dcu::structured
